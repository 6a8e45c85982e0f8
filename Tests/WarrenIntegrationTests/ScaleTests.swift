import AMQPClient
import Foundation
import NIOCore
import NIOPosix
import Testing
import WarrenBenchKit
import WarrenCore

/// One node holds more inbox users and poll sessions than an AMQP connection has channels
/// (RabbitMQ's default `channel_max` is 2,047): consumers share pooled channels (docs/protocol.md).
@Suite("A node past the broker's channel limit", .serialized)
struct ScaleTests {
    static let clients = 3_000

    /// Opens `count` clients, 250 at a time, each once its subscription is in effect.
    static func open(_ count: Int, _ client: @escaping @Sendable (Int) -> EventLoopFuture<any Channel>) async throws -> [any Channel] {
        var channels: [any Channel] = []
        for start in stride(from: 0, to: count, by: 250) {
            let batch = (start..<min(count, start + 250)).map(client)
            for future in batch { channels.append(try await future.get()) }
        }
        return channels
    }

    /// Publishes one message to each key over plain AMQP (message `i` to `keys[i]`) and waits,
    /// bounded, until the recorder has every one of them.
    static func deliverOneEach(_ keys: [String], to recorder: Recorder, warren: WarrenInstance) async throws {
        let publisher = try await BenchPublisher.open(url: "amqp://guest:guest@127.0.0.1:5672/%2f", exchange: warren.exchange,
                                                      loop: recorder.loop)
        defer { Task { await publisher.close() } }
        let outcome = try await publisher.run(keys: keys, window: 256, rate: nil).get()
        #expect(outcome.confirmed == keys.count && outcome.failed == 0)
        let deadline = ContinuousClock.now + .seconds(120)
        while try await recorder.loop.submit({ recorder.unique }).get() < keys.count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    @Test func threeThousandInboxSocketsAndThreeThousandPollSessions() async throws {
        // Inboxes made here expire a minute after their client goes (the default is a week).
        let warren = try await WarrenInstance.start(["WARREN_INBOX_EXPIRES_MS": "60000"])
        defer { Task { await warren.stop() } }
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let tag = UUID().uuidString.prefix(6).lowercased()
        let n = Self.clients

        // 3,000 WebSocket users, one inbox subscription each.
        let users = (0..<n).map { "w\($0)x\(tag)" }
        let sockets = Recorder(loop: loop, clients: n, messages: n, expected: n)
        let started = ContinuousClock.now
        let socketChannels = try await Self.open(n) { i in
            SocketClient.open(port: warren.port, path: "/v1/ws?user=\(users[i])",
                              dialect: .warren(pattern: "#.\(users[i]).#", ackEvery: 1), index: i, recorder: sockets)
        }
        print("scale: \(n) inbox sockets subscribed in \(ContinuousClock.now - started)")
        try await Self.deliverOneEach(users.map { "\($0).bot" }, to: sockets, warren: warren)
        let (gotSockets, duplicates, errors) = try await loop.submit { (sockets.unique, sockets.duplicates, sockets.errors) }.get()
        #expect(gotSockets == n, "every inbox socket got its message")
        #expect(duplicates == 0 && errors.isEmpty, "\(errors)")
        for c in socketChannels { c.close(promise: nil) }

        // 3,000 poll sessions, one inbox subscription each, long-polling.
        let pollers = (0..<n).map { "p\($0)x\(tag)" }
        let polls = Recorder(loop: loop, clients: n, messages: n, expected: n)
        let pollStarted = ContinuousClock.now
        let pollChannels = try await Self.open(n) { i in
            PollClient.open(port: warren.port, user: pollers[i], pattern: "#.\(pollers[i]).#", inbox: true, wait: 25, index: i,
                            recorder: polls)
        }
        print("scale: \(n) inbox poll sessions created in \(ContinuousClock.now - pollStarted)")
        try await Self.deliverOneEach(pollers.map { "\($0).bot" }, to: polls, warren: warren)
        let (gotPolls, pollDuplicates, pollErrors) = try await loop.submit { (polls.unique, polls.duplicates, polls.errors) }.get()
        #expect(gotPolls == n, "every poll session got its message")
        #expect(pollDuplicates == 0 && pollErrors.isEmpty, "\(pollErrors)")
        for c in pollChannels { c.close(promise: nil) }
        #expect(!warren.process.log.contains("channel limit"))
    }
}

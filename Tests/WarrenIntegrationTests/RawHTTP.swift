import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// A raw TCP client: writes whatever bytes it is given and collects the answer until the
/// server closes or `timeout` passes.
enum RawHTTP {
    struct Answer {
        var text: String
        var closedByServer: Bool
        var chunksSent = 0
        var status: Int? { Int(text.split(separator: " ").dropFirst().first ?? "") }
    }

    /// `holdReads`: nothing is read until this long after the last chunk is sent, with a 4 KB
    /// receive buffer (the server's socket fills, and its writes are partial).
    static func exchange(port: Int, _ chunks: [[UInt8]], pause: Duration = .zero, timeout: Duration = .seconds(10),
                         stopWhenClosed: Bool = false, holdReads: Duration? = nil) async throws -> Answer {
        let box = NIOLockedValueBox<[UInt8]>([])
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let closed = loop.makePromise(of: Void.self)
        let channel: any Channel
        do {
            var bootstrap = ClientBootstrap(group: loop)
            if holdReads != nil {
                bootstrap = bootstrap.channelOption(.socketOption(.so_rcvbuf), value: 4096).channelOption(.autoRead, value: false)
            }
            channel = try await bootstrap
                .channelInitializer { $0.pipeline.addHandler(RawConnection.Watch(box: box, ended: closed)) }
                .connect(host: "127.0.0.1", port: port).get()
        } catch {
            closed.succeed()
            throw error
        }
        var sent = 0
        for chunk in chunks {
            if stopWhenClosed, !channel.isActive { break }
            try? await channel.writeAndFlush(ByteBuffer(bytes: chunk))
            sent += 1
            if pause > .zero { try await Task.sleep(for: pause) }
        }
        if let holdReads {
            try await Task.sleep(for: holdReads)
            try await channel.setOption(ChannelOptions.autoRead, value: true).get()
            channel.read()
        }
        // Whichever comes first: the server's close, or the timeout.
        let outcome = loop.makePromise(of: Bool.self)
        let decided = NIOLockedValueBox(false)
        @Sendable func decide(_ byServer: Bool) {
            if decided.withLockedValue({ d in defer { d = true }; return !d }) { outcome.succeed(byServer) }
        }
        closed.futureResult.whenSuccess { decide(true) }
        let timer = loop.scheduleTask(in: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000
                                                       + timeout.components.attoseconds / 1_000_000_000)) { decide(false) }
        let byServer = try await outcome.futureResult.get()
        timer.cancel()
        if !byServer { try? await channel.close() }
        _ = try? await closed.futureResult.get()
        return Answer(text: String(decoding: box.withLockedValue { $0 }, as: UTF8.self), closedByServer: byServer, chunksSent: sent)
    }

    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
}

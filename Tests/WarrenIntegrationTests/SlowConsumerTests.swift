import AMQPClient
import Foundation
import NIOCore
import Testing
import WarrenCore

@Suite("Slow consumers", .serialized)
struct SlowConsumerTests {
    /// A burst a reading socket can drain does not close it (`websocket.slow_grace`): 64 MB in
    /// a room, 1,280 messages of 50 KB published over AMQP as fast as confirms allow. Both
    /// sockets of the room get every message and still answer; none is closed with 4008.
    @Test func readingSocketsSurviveABurstTheyCanDrain() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let room = "room.burst\(UUID().uuidString.prefix(6).lowercased())"
        let readers = [try await warren.socket(uniqueUser("reader")), try await warren.socket(uniqueUser("reader"))]
        for r in readers { try await r.subscribe("r", room) }
        let amqp = try await AMQPObserver.bound(to: warren.exchange, pattern: "nothing.here")
        defer { Task { await amqp.close() } }
        try await amqp.channel.confirmSelect()
        let body = ByteBuffer(repeating: UInt8(ascii: "x"), count: 50_000)
        var inFlight: [EventLoopFuture<Void>] = []
        for _ in 0..<1280 {
            inFlight.append(try amqp.channel.startPublish(body, exchange: warren.exchange, routingKey: room).futureResult)
            if inFlight.count == 64 { try await inFlight.removeFirst().get() }
        }
        for f in inFlight { try await f.get() }
        for r in readers {
            for _ in 0..<1280 { _ = try await r.next(op: "msg") }
            _ = try await r.request(#"{"op":"ping"}"#, expect: "pong")
        }
        #expect(!warren.process.log.contains("closing a slow consumer"))
    }

    /// A socket that falls behind for less than `websocket.slow_grace` is kept, one that stays
    /// behind longer is closed with 4008. A client stops reading while 100 messages of 50 KB
    /// (5 MB, far over a 64 KiB outbound limit, under a 64 MiB hard cap) are published to its
    /// room, then reads everything: with a grace of 30 s it gets the last message and no close;
    /// with a grace of 0 (the behaviour before the grace) it is closed with 4008.
    @Test(arguments: [30, 0])
    func aSocketBehindForLessThanTheGraceIsKept(grace: Int) async throws {
        let warren = try await WarrenInstance.start(["WARREN_LIMITS_OUTBOUND_BUFFER_BYTES": "65536",
                                                     "WARREN_LIMITS_OUTBOUND_HARD_CAP_BYTES": "67108864",
                                                     "WARREN_WEBSOCKET_SLOW_GRACE": "\(grace)"])
        defer { Task { await warren.stop() } }
        let room = "room.behind\(UUID().uuidString.prefix(6).lowercased())"
        let reader = try await RawWebSocket.connect(port: warren.port, query: "user=\(uniqueUser("behind"))")
        try await reader.sendText(#"{"op":"sub","id":"r","pattern":"\#(room)"}"#)
        _ = try await reader.read(until: { $0.contains("\"subscribed\"") }, timeout: .seconds(20))
        try await reader.reading(false)
        let publisher = try await warren.socket(uniqueUser("talker"))
        let body = String(repeating: "x", count: 50_000)
        for _ in 0..<100 { _ = try await publisher.request(#"{"op":"pub","route":"\#(room)","body":"\#(body)"}"#, expect: "puback") }
        _ = try await publisher.request(#"{"op":"pub","route":"\#(room)","body":"the end"}"#, expect: "puback")
        let seen = try await reader.read(until: { $0.contains("the end") })
        if grace > 0 {
            #expect(seen.close == nil && seen.texts.contains { $0.contains("the end") }, "close \(String(describing: seen.close))")
            #expect(!warren.process.log.contains("closing a slow consumer"))
        } else {
            #expect(seen.close == 4008, "close \(String(describing: seen.close)) after \(seen.texts.count) frames")
        }
        _ = await publisher.close()
    }

    /// A client that never reads fills its bounded outbound buffer and is closed with 4008;
    /// Warren's memory does not grow with it and other sockets carry on.
    @Test func aSocketThatNeverReadsIsClosedWith4008() async throws {
        let warren = try await WarrenInstance.start(["WARREN_LIMITS_OUTBOUND_BUFFER_BYTES": "65536"])
        defer { Task { await warren.stop() } }
        let room = "room.slow\(UUID().uuidString.prefix(6).lowercased())"
        let sleeper = try await RawWebSocket.connect(port: warren.port, query: "user=\(uniqueUser("sleepy"))")
        try await sleeper.sendText(#"{"op":"sub","id":"r","pattern":"\#(room)"}"#)
        let publisher = try await warren.socket(uniqueUser("talker"))
        let watcher = try await warren.socket(uniqueUser("watcher"))
        try await watcher.subscribe("r", room)
        // Give the sleeper's subscription a moment to be acknowledged by reading until the answer… without
        // reading: instead publish until Warren reports the slow consumer (bounded by count).
        let body = String(repeating: "x", count: 8000)
        var sent = 0
        while sent < 5000, !warren.process.log.contains("closing a slow consumer") {
            _ = try await publisher.request(#"{"op":"pub","route":"\#(room)","body":"\#(body)"}"#, expect: "puback")
            sent += 1
        }
        #expect(warren.process.log.contains("closing a slow consumer"), "after \(sent) messages")
        // Now read everything the sleeper was sent: it ends with a close frame carrying 4008.
        let code = try await sleeper.readUntilClose()
        #expect(code == 4008)
        // The watcher got every message.
        for _ in 0..<sent { _ = try await watcher.next(op: "msg") }
        await watcher.close()
        await publisher.close()
    }
}

import AMQPClient
import Foundation
import NIOCore
import Testing
import WarrenCore

@Suite("Bridge under load and abuse", .serialized)
struct BridgeStressTests {
    /// 200 sockets on one room each receive every one of 500 messages, while the broker
    /// holds a single live queue for the node.
    @Test func liveFanOutToTwoHundredSockets() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let room = "room.lobby\(UUID().uuidString.prefix(6).lowercased())"
        var sockets: [TestSocket] = []
        for i in 0..<200 {
            let s = try await warren.socket("u\(i)x\(UUID().uuidString.prefix(4).lowercased())")
            try await s.subscribe("r", room)
            sockets.append(s)
        }
        let queues = try Broker.ctl("list_queues", "name", "--no-table-headers", "--quiet")
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0 == "warren.live.\(warren.nodeID)" }
        #expect(queues.count == 1, "one live queue for the node")

        // The publisher is not one of the 200 readers: one reader per socket.
        let publisher = try await warren.socket(uniqueUser("announcer"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for i in 0..<500 {
                    _ = try await publisher.request(#"{"op":"pub","route":"\#(room)","body":\#(i)}"#, expect: "puback")
                }
            }
            for s in sockets {
                group.addTask {
                    var seen = [Int]()
                    while seen.count < 500 {
                        let f = try await s.next(op: "msg", timeout: .seconds(60))
                        seen.append(Int(f.env!["body"]!.intValue!))
                    }
                    #expect(seen == Array(0..<500), "\(s.name) got every message, in order")
                }
            }
            try await group.waitForAll()
        }
        for s in sockets { await s.close() }
        await publisher.close()
    }

    @Test func badInputIsAnsweredAndOthersCarryOn() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let user = uniqueUser("mallory")
        let bystander = try await warren.socket(uniqueUser("bystander"))
        try await bystander.subscribe("r", "room.quiet")
        let s = try await warren.socket(user)

        let cases: [(String, String, String?)] = [
            ("not json at all", "bad_frame", nil),
            (#"{"op":"dance"}"#, "bad_frame", nil),
            (#"{"op":"sub","id":"s1"}"#, "bad_frame", "s1"),
            (#"{"op":"pub","body":"no route","cid":"c1"}"#, "bad_frame", "c1"),
            (#"{"op":"pub","route":"room.#","body":"x","cid":"c2"}"#, "bad_route", "c2"),
            (#"{"op":"pub","route":"\#(String(repeating: "a", count: 300))","body":"x","cid":"c3"}"#, "bad_route", "c3"),
            (#"{"op":"unsub","id":"nope"}"#, "not_found", "nope"),
            (#"{"op":"pub","route":"room.x","body":"\#(String(repeating: "y", count: 70_000))","cid":"c4"}"#, "too_large", "c4"),
        ]
        for (frame, code, ref) in cases {
            let e = try await s.request(frame, expect: "error")
            #expect(e["code"]?.stringValue == code, "\(frame.prefix(60))")
            #expect(e["ref"]?.stringValue == ref, "\(frame.prefix(60))")
        }
        try await s.subscribe("dup", "room.a")
        let conflict = try await s.request(#"{"op":"sub","id":"dup","pattern":"room.b"}"#, expect: "error")
        #expect(conflict["code"]?.stringValue == "conflict")

        // 10,000 subscriptions: the limit answers, the socket lives on.
        var limited = 0
        for i in 0..<10_000 {
            try await s.send(#"{"op":"sub","id":"m\#(i)","pattern":"room.r\#(i)"}"#)
        }
        var subscribed = 1
        while subscribed + limited < 10_001 {
            guard let f = await s.next(timeout: .seconds(60)) else { break }
            if f["op"]?.stringValue == "subscribed" { subscribed += 1 }
            if f["op"]?.stringValue == "error" { limited += 1; #expect(f["code"]?.stringValue == "rate_limited") }
        }
        #expect(subscribed == 100, "the per-connection limit (100) holds")
        // Too many errors in a minute close the socket with 1008 — but only after max_bad_frames (100);
        // this socket has had far more, so it must have been closed.
        #expect(await s.closeCode() == 1008)

        // A 2 MB frame closes its socket with 1009.
        let big = try await warren.socket(uniqueUser("big"))
        try await big.send(#"{"op":"pub","route":"room.x","body":"\#(String(repeating: "z", count: 2 << 20))"}"#)
        #expect(await big.closeCode() == 1009)

        // Binary frames are refused with bad_frame.
        // Everyone else carries on.
        let other = try await warren.socket(uniqueUser("other"))
        _ = try await other.request(#"{"op":"pub","route":"room.quiet","body":"still here"}"#, expect: "puback")
        let delivered = try await bystander.next(op: "msg")
        #expect(delivered.env?["body"] == .string("still here"))
        await other.close()
        await bystander.close()
    }
}

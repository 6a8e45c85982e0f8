import Foundation
import Testing
import WarrenCore

@Suite("Drain", .serialized)
struct DrainTests {
    @Test func sigtermDrainsSocketsPollsAndInboxes() async throws {
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let warren = try await WarrenInstance.start(["WARREN_LOG_LEVEL": "debug"], exchange: exchange)
        let dave = uniqueUser("dave"), alice = uniqueUser("alice")
        let daveSocket = try await warren.socket(dave, device: "phone")
        try await daveSocket.subscribe("in", mine(dave), mode: "inbox")
        var sockets = [daveSocket]
        for i in 0..<99 {
            let s = try await warren.socket("s\(i)x\(UUID().uuidString.prefix(4).lowercased())")
            sockets.append(s)
        }
        let sender = sockets[1]
        _ = sender // the senders below are other sockets; keep all 100 open
        let aliceSocket = try await warren.socket(alice)
        var sent = Set<String>()
        for i in 0..<5 {
            let ack = try await aliceSocket.request(#"{"op":"pub","route":"\#(alice).\#(dave)","body":\#(i)}"#, expect: "puback")
            sent.insert(ack["id"]!.stringValue!)
        }
        for _ in 0..<5 { _ = try await daveSocket.next(op: "msg") }   // delivered, not acked
        await aliceSocket.close()

        var pollers: [Poller] = []
        for i in 0..<20 {
            pollers.append(try await Poller.open(port: warren.port, user: "p\(i)x\(UUID().uuidString.prefix(4).lowercased())",
                                                 subscriptions: #"[{"id":"r","pattern":"room.drain"}]"#))
        }
        let polls = pollers.map { p in Task { try await p.poll(wait: 25) } }
        #expect(await warren.process.waitForLog("long-poll waiting", times: 20))

        let started = ContinuousClock.now
        warren.process.process.signal(SIGTERM)
        for s in sockets {
            #expect(await s.closeCode() == 1001, "\(s.name)")
        }
        for p in polls {
            let answer = try await p.value
            #expect(answer.messages.isEmpty)
        }
        let status = await warren.process.waitForExit(timeout: .seconds(15))
        #expect(status == 0)
        print("drained and exited in \(ContinuousClock.now - started)")
        #expect(ContinuousClock.now - started < .seconds(10), "within shutdown.grace")

        // The unacked inbox messages go to the next connection, on a new node.
        let next = try await WarrenInstance.start(exchange: exchange)
        defer { Task { await next.stop() } }
        let again = try await next.socket(dave, device: "phone")
        try await again.subscribe("in", mine(dave), mode: "inbox")
        var redelivered = Set<String>()
        while redelivered.count < 5 {
            let f = try await again.next(op: "msg")
            redelivered.insert(f.env!["id"]!.stringValue!)
        }
        #expect(redelivered == sent)
        await again.close()
    }
}

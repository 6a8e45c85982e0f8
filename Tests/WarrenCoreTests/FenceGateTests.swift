import Testing
@testable import WarrenCore

/// Which fence each recovery waits for, event by event.
@Suite("Fence gate")
struct FenceGateTests {
    @Test func oneFenceServesThoseBeforeItAndTheNextThoseDuringIt() {
        var gate = FenceGate()
        #expect(gate.request(1, newFence: "f1") == .publish(fence: "f1"))
        // On its way: published before these asked, so it cannot prove their bindings.
        #expect(gate.request(2, newFence: "x") == .none)
        #expect(gate.request(3, newFence: "y") == .none)
        let first = gate.landed("f1", newFence: "f2")
        #expect(first.waiters == [1] && first.then == .publish(fence: "f2"))
        let second = gate.landed("f2", newFence: "f3")
        #expect(second.waiters == [2, 3] && second.then == .none)
        #expect(gate.inFlight == nil)
    }

    @Test func aFenceLandingTwiceOrUnknownAnswersNoOne() {
        var gate = FenceGate()
        _ = gate.request(1, newFence: "f1")
        #expect(gate.landed("other", newFence: "f2").waiters.isEmpty)
        #expect(gate.landed("f1", newFence: "f2").waiters == [1])
        // Recorded here and then seen in the database: the second landing is nothing.
        #expect(gate.landed("f1", newFence: "f3").waiters.isEmpty)
        #expect(gate.request(4, newFence: "f4") == .publish(fence: "f4"))
    }
}

import NIOConcurrencyHelpers
import Testing
@testable import WarrenHTTP

@Suite("The per-connection task gate")
struct ConnectionTaskGateTests {
    final class Starts: Sendable {
        let count = NIOLockedValueBox(0)
        var start: @Sendable () -> Void { { self.count.withLockedValue { $0 += 1 } } }
    }

    @Test func aPollerFirstEndsTheTaskAndANeedStartsItOnce() async {
        let gate = ConnectionTaskGate()
        let starts = Starts()
        gate.servedBelow()
        #expect(await gate.serveNow(start: starts.start) == false)
        gate.servedBelow()
        #expect(starts.count.withLockedValue { $0 } == 0)
        gate.need()
        gate.need()
        #expect(starts.count.withLockedValue { $0 } == 1)
    }

    @Test func aTaskAskingFirstWaitsForTheDecision() async {
        let gate = ConnectionTaskGate()
        let starts = Starts()
        async let serve = gate.serveNow(start: starts.start)
        // The decision comes from the pipeline whenever the first request is read.
        while !gate.isTaskWaiting { await Task.yield() }
        gate.servedBelow()
        #expect(await serve == false)
        gate.need()
        #expect(starts.count.withLockedValue { $0 } == 1)
    }

    @Test func somethingElseFirstKeepsTheTask() async {
        let gate = ConnectionTaskGate()
        let starts = Starts()
        gate.need()
        #expect(await gate.serveNow(start: starts.start) == true)
        let second = ConnectionTaskGate()
        async let serve = second.serveNow(start: starts.start)
        while !second.isTaskWaiting { await Task.yield() }
        second.need()
        #expect(await serve == true)
        #expect(starts.count.withLockedValue { $0 } == 0)
    }
}

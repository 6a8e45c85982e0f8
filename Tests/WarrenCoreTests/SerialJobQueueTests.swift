import Testing
@testable import WarrenCore

@Suite("Serial job queue")
struct SerialJobQueueTests {
    /// Jobs run one at a time in order; a synchronous body runs only while none is submitted
    /// or running, so it is never between two jobs' halves.
    @Test func runNowIfIdleRunsOnlyWhileNoJobIsPending() async throws {
        let queue = SerialJobQueue()
        #expect(queue.runNowIfIdle { 1 } == 1)
        let (gate, open) = AsyncStream<Void>.makeStream()
        let (started, didStart) = AsyncStream<Void>.makeStream()
        let first = Task {
            try await queue.run {
                didStart.yield()
                for await _ in gate { break }
                return "first"
            }
        }
        for await _ in started { break }
        #expect(queue.runNowIfIdle { 2 } == nil, "a job is running")
        let second = Task { try await queue.run { "second" } }
        open.yield()
        #expect(try await first.value == "first")
        #expect(try await second.value == "second")
        #expect(queue.runNowIfIdle { 3 } == 3)
    }
}

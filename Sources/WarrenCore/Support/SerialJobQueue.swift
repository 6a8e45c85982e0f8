import NIOConcurrencyHelpers

/// Runs async jobs one at a time, in submission order.
public final class SerialJobQueue: Sendable {
    public init() {}

    private struct State {
        var tail: Task<Void, Never>?
        /// Jobs submitted and not yet finished.
        var pending = 0
    }
    private let state = NIOLockedValueBox(State())

    public func run<T: Sendable>(_ job: @escaping @Sendable () async throws -> T) async throws -> T {
        let (stream, continuation) = AsyncStream<Result<T, Error>>.makeStream()
        state.withLockedValue { s in
            let before = s.tail
            s.pending += 1
            s.tail = Task {
                await before?.value
                let result: Result<T, Error>
                do { result = .success(try await job()) } catch { result = .failure(error) }
                // Done before the caller hears of it: once `run` returns, the queue is idle
                // unless another job was submitted.
                self.state.withLockedValue { $0.pending -= 1 }
                continuation.yield(result)
                continuation.finish()
            }
        }
        for await result in stream { return try result.get() }
        throw CancellationError()
    }

    /// Runs `body` at once, synchronously, when no job is submitted or running (so it is in
    /// order with every job); nil when one is, and `body` did not run. Nothing can be submitted
    /// while `body` runs.
    public func runNowIfIdle<T>(_ body: () -> T) -> T? {
        state.withLockedValue { s in s.pending == 0 ? body() : nil }
    }
}

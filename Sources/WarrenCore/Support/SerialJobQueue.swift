import NIOConcurrencyHelpers

/// Runs async jobs one at a time, in submission order.
public final class SerialJobQueue: Sendable {
    public init() {}

    private let tail = NIOLockedValueBox<Task<Void, Never>?>(nil)

    public func run<T: Sendable>(_ job: @escaping @Sendable () async throws -> T) async throws -> T {
        let (stream, continuation) = AsyncStream<Result<T, Error>>.makeStream()
        tail.withLockedValue { previous in
            let before = previous
            previous = Task {
                await before?.value
                do { continuation.yield(.success(try await job())) } catch { continuation.yield(.failure(error)) }
                continuation.finish()
            }
        }
        for await result in stream { return try result.get() }
        throw CancellationError()
    }
}

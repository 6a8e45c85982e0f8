/// An operation that did not finish in time.
public struct DeadlineExceeded: Error, CustomStringConvertible {
    public let limit: Duration
    public var description: String { "no answer within \(limit)" }
}

/// Runs `operation`, giving up (and cancelling it) after `limit`. For calls into a database
/// whose client waits for a connection as long as the server is away: a client request must be
/// answered (`unavailable`), and a health check must notice.
public func withDeadline<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw DeadlineExceeded(limit: limit)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw DeadlineExceeded(limit: limit) }
        return first
    }
}

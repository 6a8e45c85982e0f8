/// A wait that reached its guard time before the event it awaited.
public struct TimedOut: Error {
    public init() {}
}

/// Waits for the first element of `events` that matches `predicate`. `timeout` only guards
/// against a hang (a broken test fails instead of stalling the suite); it asserts no timing.
public func firstMatch<Element: Sendable>(in events: AsyncStream<Element>, within timeout: Duration = .seconds(30),
                                          where predicate: @escaping @Sendable (Element) -> Bool) async throws {
    try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask {
            for await e in events where predicate(e) { return true }
            return false
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return false
        }
        let ok = try await group.next()!
        group.cancelAll()
        if !ok { throw TimedOut() }
    }
}

import NIOConcurrencyHelpers

/// One store read for every recovery that asks the same thing at once: a wave of reconnecting
/// sockets in one room, all resubscribing `since` the same message and let through by the same
/// fence (``StoreFence``), costs one lookup and one scan, not one per socket.
///
/// Sharing is sound only among recoveries that passed the same fence: a read started after a
/// fence holds everything routed before the bindings that fence answers, so the fence's id is
/// part of the key (a recovery let through by a later fence reads again).
final class RecoveryFlights: Sendable {
    /// What a read found: the route of the message `since` names (nil when it is not kept) and
    /// the recovery, whose `queries` only the first asker counts.
    struct Read: Sendable {
        var sinceRoute: String?
        var recovery: Recovery
    }

    private let flights = NIOLockedValueBox<[String: Task<Read, Never>]>([:])

    /// The read for `key`: the one in flight, or `read` run now for everyone asking meanwhile.
    func read(_ key: String, _ read: @escaping @Sendable () async -> Read) async -> Read {
        let (task, joined) = join(key, read)
        var result = await task.value
        if joined { result.recovery.queries = 0 }
        return result
    }

    /// The read in flight for `key` (`joined`), or `read` started as one.
    func join(_ key: String, _ read: @escaping @Sendable () async -> Read) -> (task: Task<Read, Never>, joined: Bool) {
        flights.withLockedValue { f -> (Task<Read, Never>, Bool) in
            if let running = f[key] { return (running, true) }
            let task = Task { [self] in
                let result = await read()
                flights.withLockedValue { _ = $0.removeValue(forKey: key) }
                return result
            }
            f[key] = task
            return (task, false)
        }
    }

    /// Reads in flight (for tests).
    var count: Int { flights.withLockedValue { $0.count } }
}

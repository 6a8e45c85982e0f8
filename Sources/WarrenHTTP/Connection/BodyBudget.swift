import Synchronization

/// The request body bytes every connection of a process holds in memory at once, bounded
/// (`http.max_body_bytes_in_flight`): each connection's bodies are bounded by `http.max_body`,
/// but a hundred clients each holding a body one byte short of it would pin a hundred of them
/// until their timeouts. A connection takes its body's bytes from here as they arrive and gives
/// them back once the request is answered or the connection closes; a body that would take the
/// total past the limit is refused `503`.
final class BodyBudget: Sendable {
    let limit: Int
    private let held = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    /// Bytes held now, by every connection.
    var inUse: Int { held.load(ordering: .relaxed) }

    /// Takes `bytes` if they fit under the limit.
    func take(_ bytes: Int) -> Bool {
        guard bytes > 0 else { return true }
        var current = held.load(ordering: .relaxed)
        while true {
            guard current + bytes <= limit else { return false }
            let (exchanged, original) = held.compareExchange(expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    func give(_ bytes: Int) {
        guard bytes > 0 else { return }
        held.subtract(bytes, ordering: .relaxed)
    }
}

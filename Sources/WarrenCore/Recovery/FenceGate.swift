/// Which fence each recovery waits for, as a pure value (``StoreFence`` does the I/O).
///
/// A recovery needs a fence published after its live binding was in place: everything routed
/// before the binding is ahead of that fence in the store's queue. One fence serves every
/// recovery that asked before it was published; those asking while it is on its way wait for
/// the next one, published as soon as it lands (written or given up). So a wave of thousands
/// of reconnecting sockets costs two fences, not thousands.
struct FenceGate {
    /// What the driver does next.
    enum Action: Equatable {
        case none
        /// Publish this fence and watch for it.
        case publish(fence: String)
    }

    /// The fence on its way and who waits for it.
    private(set) var inFlight: (fence: String, waiters: [Int])?
    /// Who waits for the fence after it.
    private(set) var next: [Int] = []

    /// Waiter `id` asks for a fence; `newFence` names one should it be published now.
    mutating func request(_ id: Int, newFence: String) -> Action {
        guard inFlight != nil else {
            inFlight = (newFence, [id])
            return .publish(fence: newFence)
        }
        next.append(id)
        return .none
    }

    /// The fence landed (`written`) or was given up: the waiters it answers, and the next fence
    /// to publish for those who came meanwhile. A fence not in flight answers no one (it
    /// landed twice: locally and in the database).
    mutating func landed(_ fence: String, newFence: String) -> (waiters: [Int], then: Action) {
        guard let current = inFlight, current.fence == fence else { return ([], .none) }
        inFlight = nil
        guard !next.isEmpty else { return (current.waiters, .none) }
        inFlight = (newFence, next)
        next = []
        return (current.waiters, .publish(fence: newFence))
    }
}

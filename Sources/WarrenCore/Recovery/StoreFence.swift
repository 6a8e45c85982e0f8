import Logging
import NIOConcurrencyHelpers

/// Proof that the store holds everything routed before a moment: a recovery's seam
/// (docs/guarantees.md, "Recovery").
///
/// The store is written from its queue, after the fact. A recovering subscription's live
/// binding is in place at some moment; what was routed before it reaches the client only from
/// the store, so the store must hold all of it before it is read. A fence is a message of
/// Warren's own published straight to the store's queue (the default exchange) after that
/// moment: it stands behind everything routed before, and the writer records its id in the
/// same transaction as the batch it ends. The store's queue has a single active consumer,
/// which writes in queue order: once the fence is recorded, so is everything ahead of it. A
/// writer on this node says so at once; one on another node is seen in the database.
public final class StoreFence: Sendable {
    /// The AMQP `type` a fence is published with.
    public static let messageType = "warren.fence"
    /// How long a recorded fence is kept (ms): pruned with old messages.
    public static let kept: Int64 = 3_600_000
    /// How often the database is asked whether a fence was recorded elsewhere.
    static let poll: Duration = .milliseconds(20)

    let store: any ConversationStore
    let wait: Duration
    let logger: Logger
    private let ids = UUIDv7Generator()
    private let publisher = NIOLockedValueBox<(@Sendable (String) async throws -> Void)?>(nil)
    private let state = NIOLockedValueBox<(gate: FenceGate, waiters: [Int: CheckedContinuation<String?, Never>], nextID: Int)>(
        (FenceGate(), [:], 0))

    /// `wait`: how long a fence may take before the recoveries waiting for it are told the
    /// store is unavailable.
    public init(store: any ConversationStore, wait: Duration, logger: Logger) {
        self.store = store
        self.wait = wait
        self.logger = logger
    }

    /// How fences are published (the broker link's publisher), once it is up.
    public func attach(publish: @escaping @Sendable (String) async throws -> Void) {
        publisher.withLockedValue { $0 = publish }
    }

    /// Returns once a fence published after this call began is recorded: its id (every caller
    /// it answers gets the same), or nil when it was not within `wait` (or could not be published).
    public func pass() async -> String? {
        await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let fence = newFence()
            let action = state.withLockedValue { s -> FenceGate.Action in
                let id = s.nextID
                s.nextID += 1
                s.waiters[id] = continuation
                return s.gate.request(id, newFence: fence)
            }
            perform(action)
        }
    }

    /// This node's writer recorded these fences (committed).
    func recorded(_ fences: [String]) {
        for fence in fences { land(fence, written: true) }
    }

    private func newFence() -> String { ids.next(nowMilliseconds: UInt64(WallClock.milliseconds())) }

    private func perform(_ action: FenceGate.Action) {
        guard case .publish(let fence) = action else { return }
        Task { await watch(fence) }
    }

    /// Publishes `fence` and watches for it until it is recorded or `wait` is up.
    private func watch(_ fence: String) async {
        guard let publish = publisher.withLockedValue({ $0 }) else { return land(fence, written: false) }
        let started = ContinuousClock.now
        do {
            try await publish(fence)
        } catch {
            logger.warning("could not publish a recovery fence to the store's queue", metadata: ["error": "\(error)"])
            return land(fence, written: false)
        }
        while ContinuousClock.now - started < wait {
            if !inFlight(fence) { return }
            if (try? await withDeadline(.seconds(1), { [store] in try await store.fenceWritten(fence) })) == true {
                return land(fence, written: true)
            }
            try? await Task.sleep(for: Self.poll)
        }
        if !inFlight(fence) { return }
        logger.warning("a recovery fence was not recorded in time: is the store's writer behind?",
                       metadata: ["wait": "\(wait)"])
        land(fence, written: false)
    }

    /// Whether `fence` is still awaited (not recorded here meanwhile).
    private func inFlight(_ fence: String) -> Bool { state.withLockedValue { $0.gate.inFlight?.fence == fence } }

    private func land(_ fence: String, written: Bool) {
        let next = newFence()
        let (answered, action) = state.withLockedValue { s -> ([CheckedContinuation<String?, Never>], FenceGate.Action) in
            let (waiters, then) = s.gate.landed(fence, newFence: next)
            return (waiters.compactMap { s.waiters.removeValue(forKey: $0) }, then)
        }
        for continuation in answered { continuation.resume(returning: written ? fence : nil) }
        perform(action)
    }
}

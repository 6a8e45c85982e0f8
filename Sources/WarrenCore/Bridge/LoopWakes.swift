import NIOCore

/// The loops one hand-off left to wake (``BatchWakeEventLoop``), woken together at the end: a
/// single loop alone, two or more of one group with one call.
struct LoopWakes {
    private var first: (any BatchWakeEventLoop)?
    private var others: [any BatchWakeEventLoop] = []

    /// Hands `task` to `loop`: queued, to be woken by ``wake()``, when the loop can wait for
    /// that; otherwise run as any loop runs a task.
    mutating func hand(_ task: @escaping @Sendable () -> Void, to loop: any EventLoop) {
        guard let batched = loop as? any BatchWakeEventLoop else { return loop.execute(task) }
        guard batched.enqueueWithoutWaking(task) else { return }
        if first == nil { first = batched } else { others.append(batched) }
    }

    /// Wakes the loops that need it.
    func wake() {
        guard let first else { return }
        if others.isEmpty { return first.wake() }
        if let group = first.wakeGroup, others.allSatisfy({ $0.wakeGroup == group }) { return first.wakeAll() }
        first.wake()
        for loop in others { loop.wake() }
    }
}

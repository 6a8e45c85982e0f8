import NIOCore

/// An event loop that other threads can hand tasks to without waking it for each, and that can
/// be woken together with the other loops of its group in one system call (the epoll door's
/// loops share one `eventfd` for this).
///
/// The live fan-out hands a message's shares to every loop first, then wakes them (``LoopWakes``).
/// Woken one after the other, the first loop woken often took the broker thread's core at once,
/// and the next loop's wake-up waited behind that loop's whole share, milliseconds (BENCHMARKS.md,
/// 2026-12-07).
public protocol BatchWakeEventLoop: EventLoop {
    /// Queues `task` to run on the loop, in order with ``EventLoop/execute(_:)``'s tasks, without
    /// waking it. True when the caller must wake the loop (``wake()`` or ``wakeAll()``) for the task
    /// to run: it was not already due to wake.
    func enqueueWithoutWaking(_ task: @escaping @Sendable () -> Void) -> Bool
    /// Wakes this loop.
    func wake()
    /// The loops ``wakeAll()`` wakes (this one among them); nil when the loop has no group.
    var wakeGroup: ObjectIdentifier? { get }
    /// Wakes every loop of ``wakeGroup`` with one system call.
    func wakeAll()
}

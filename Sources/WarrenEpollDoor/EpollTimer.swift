#if os(Linux)
import NIOCore

/// A task scheduled on an ``EpollLoop``, in its heap by deadline (then by the order scheduled).
/// A class: cancelling drops its task, and the heap drops it when it comes due. Touched on its loop's
/// thread only.
final class EpollTimer: Comparable, @unchecked Sendable {
    let deadline: NIODeadline
    /// Dropped when it runs or is cancelled (what it holds is not kept until the deadline).
    var task: (() -> Void)?
    var order: UInt64 = 0

    init(deadline: NIODeadline, task: @escaping () -> Void) {
        self.deadline = deadline
        self.task = task
    }

    static func < (a: EpollTimer, b: EpollTimer) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.order < b.order)
    }

    static func == (a: EpollTimer, b: EpollTimer) -> Bool { a === b }
}
#endif

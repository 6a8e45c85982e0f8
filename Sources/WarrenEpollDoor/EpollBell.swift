#if os(Linux)
import CWarrenEpoll
import Glibc

/// One `eventfd` in the epoll set of every loop of a door, edge-triggered and never read: one
/// write wakes them all (``EpollLoop/wakeAll()``), where waking each loop with its own `eventfd`
/// let the first loop woken take the waker's core before the next was woken. Closed when the
/// last loop lets go of it.
final class EpollBell: Sendable {
    let fd: Int32

    init() {
        fd = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        precondition(fd >= 0, "cannot set up an epoll loop's bell: errno \(errno)")
    }

    /// Wakes every loop watching the bell. Its count is never read, so each write adds one; at
    /// one write per live message it cannot reach the 2⁶⁴ − 2 at which a write would fail.
    func ring() {
        var one: UInt64 = 1
        _ = Glibc.write(fd, &one, 8)
    }

    deinit { Glibc.close(fd) }
}
#endif

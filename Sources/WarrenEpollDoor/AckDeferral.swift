#if os(Linux)
import Glibc

/// Puts a poller's socket in the kernel's delayed-ACK ("pingpong") mode before each answer, so
/// that the request that follows it is not acknowledged at once with a packet of its own.
///
/// A long-poll is answered well after it arrives (a message later, or at its `wait`), so Linux treats the connection as
/// non-interactive and acknowledges each request at once: a pure ACK, sent and processed while
/// the answers of a fan-out burst go out, since every poller polls again as soon as it is
/// answered. In delayed-ACK mode that ACK waits (up to ~40 ms) for data to ride on, or for the
/// timer: after the burst. The kernel leaves the mode when the timer fires, so it is set again
/// before every answer. The packets are the same; the work of the ACK moves out of the burst.
/// An ordinary request-and-response HTTP connection is in this mode anyway: a client whose
/// request takes two writes must set `TCP_NODELAY`, as browsers and HTTP libraries do.
enum AckDeferral {
    /// Delays the acknowledgement of what `fd` receives next (`TCP_QUICKACK` off).
    static func deferNext(on fd: Int32) {
        var off: Int32 = 0
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_QUICKACK, &off, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Whether `fd` acknowledges at once (`TCP_QUICKACK` as the kernel reports it); nil if it
    /// cannot tell (not a TCP socket).
    static func acksAtOnce(_ fd: Int32) -> Bool? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_QUICKACK, &value, &length) == 0 else { return nil }
        return value != 0
    }
}
#endif

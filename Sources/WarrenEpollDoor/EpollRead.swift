#if os(Linux)
import NIOCore

/// What one `read` of a connection's socket gave (``EpollLoop/read(_:)``).
enum EpollRead {
    case bytes(ByteBuffer)
    /// The client closed its side.
    case end
    /// Nothing to read now (`EAGAIN`).
    case nothing
    /// The connection failed (reset, …).
    case failed
}
#endif

import NIOCore

/// What an ``HTTPConnection`` needs of the socket it serves: a NIO channel's
/// (``HTTPConnectionHandler``: every connection of a NIO listener, TLS included) or the epoll
/// door's. Called on ``loop`` only; none of it blocks.
package protocol HTTPConnectionIO: AnyObject, SendableMetatype {
    /// The thread the connection is served on: answers, timers and tasks' results come back here.
    var loop: any EventLoop { get }
    /// The connection is open.
    var isActive: Bool { get }
    /// Queues `bytes` (one whole response, or `100 Continue`) and flushes them. While more than
    /// `http.max_pending_output` waits, the I/O says its output is not writable
    /// (``HTTPConnection/writabilityChanged(_:)``), and again when it drained.
    func write(_ bytes: ByteBuffer)
    /// Writes `bytes`, then closes the output once they are all written; reading goes on
    /// until the client closes (``HTTPConnection/inputClosed()``) or the connection is closed.
    func writeAndCloseOutput(_ bytes: ByteBuffer)
    /// Closes the connection now.
    func close()
    /// Stops reading the socket (TCP then pushes back on the client) until ``resumeReading()``.
    func stopReading()
    func resumeReading()
    /// The NIO channel, when the connection is served on one: the router's endpoints and
    /// WebSocket upgrades need it. Without one (the epoll door), such requests are handed on.
    var channel: (any Channel)? { get }
    /// Gives the connection, with `bytes` (the request to answer and all that was read after
    /// it) first, to a server that has a ``channel`` for it. Nothing more is asked of this I/O;
    /// what it has not written yet is written first, without waiting on the loop.
    func handOn(_ bytes: ByteBuffer)
    /// Makes the connection a WebSocket's after its `101`: `install` adds the WebSocket's
    /// handlers to the channel's pipeline, the connection's own handler leaves, and `forward`
    /// (what the client sent after the handshake) goes on to them. False when there is no
    /// channel or it could not be set up (the caller releases the admission and closes).
    func upgrade(installing install: (ChannelPipeline.SynchronousOperations) throws -> Void, forward: ByteBuffer) -> Bool
}

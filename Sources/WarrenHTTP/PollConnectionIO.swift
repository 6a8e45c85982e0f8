import NIOCore

/// What a ``PollConnection`` needs of the socket it serves: NIO's channel
/// (``PollConnectionHandler``, for TLS and every connection a NIO listener accepted) or the
/// epoll door's own (``EpollConnection``). Called on ``loop`` only.
protocol PollConnectionIO: AnyObject, SendableMetatype {
    /// The thread the connection is served on: answers, timers and tasks' results come back here.
    var loop: any EventLoop { get }
    /// The connection is open.
    var isActive: Bool { get }
    /// Writes `bytes` (one whole response, or `100 Continue`) and flushes them.
    func write(_ bytes: ByteBuffer)
    /// Closes the connection (once what was written before is flushed).
    func close()
    /// Gives the connection to hummingbird's router, `bytes` (the request being answered, if
    /// any, and everything read after it) first. Nothing more is asked of this I/O after it.
    func handOn(_ bytes: ByteBuffer)
    /// Whether WebSocket handshakes are admitted on this I/O (``upgrade(_:key:forward:)``); if
    /// not, a handshake is handed on (``handOn(_:)``) to a door that admits them.
    var upgradesWebSockets: Bool { get }
    /// Makes the connection an admitted WebSocket's after its `101`: `forward` is what the
    /// client sent after the handshake. False when it could not be set up (the caller releases
    /// the admission and closes).
    func upgrade(_ admitted: WebSocketDoor.Admitted, door: WebSocketDoor, forward: ByteBuffer) -> Bool
}

import NIOCore

/// Where a client session's frames go: a WebSocket, or a poll session's buffer.
///
/// `send` is called from any thread (deliveries arrive on the AMQP event loop)
/// and must not block: implementations keep a bounded buffer and answer false
/// when it is full, so one slow client can never grow Warren's memory.
public protocol SessionOutput: AnyObject, Sendable {
    /// Queues one text frame answering the client (`subscribed`, `puback`, `error`, `pong`);
    /// false when the outbound buffer is full.
    func send(_ frame: ByteBuffer) -> Bool
    /// Queues one `msg` frame; `inboxID` is the envelope id of an inbox delivery (acked or
    /// leased by it), nil for live. False when the outbound buffer is full.
    func deliver(_ frame: ByteBuffer, inboxID: String?) -> Bool
    /// Closes the connection with a WebSocket close code (4008 slow consumer, …).
    func close(code: UInt16, reason: String)
    /// The event loop the output writes on, if it has one: the session's inbox consumer is put
    /// on a broker connection running there.
    var eventLoop: (any EventLoop)? { get }
    /// The event loop the live fan-out hands this output's deliveries to, if any
    /// (``LiveReceiver/liveLoop``): a poll session's, where its polls are answered. Nil: they
    /// arrive on the AMQP event loop (a WebSocket's output hands them on to its socket itself).
    var liveDeliveryLoop: (any EventLoop)? { get }
}

extension SessionOutput {
    public var eventLoop: (any EventLoop)? { nil }
    public var liveDeliveryLoop: (any EventLoop)? { nil }

    /// A WebSocket writes deliveries like any other frame.
    public func deliver(_ frame: ByteBuffer, inboxID: String?) -> Bool { send(frame) }
}

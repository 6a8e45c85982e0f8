import NIOCore

/// Where a client session's frames go: a WebSocket, later a poll buffer.
///
/// `send` is called from any thread (deliveries arrive on the AMQP event loop)
/// and must not block: implementations keep a bounded buffer and answer false
/// when it is full, so one slow client can never grow Warren's memory.
public protocol SessionOutput: AnyObject, Sendable {
    /// Queues one text frame; false when the outbound buffer is full.
    func send(_ frame: ByteBuffer) -> Bool
    /// Closes the connection with a WebSocket close code (4008 slow consumer, …).
    func close(code: UInt16, reason: String)
}

/// WebSocket close codes of DESIGN §4.
public enum CloseCode {
    public static let normal: UInt16 = 1000
    public static let goingAway: UInt16 = 1001
    public static let policy: UInt16 = 1008
    public static let tooBig: UInt16 = 1009
    public static let internalError: UInt16 = 1011
    public static let slowConsumer: UInt16 = 4008
    public static let tokenExpired: UInt16 = 4401
}

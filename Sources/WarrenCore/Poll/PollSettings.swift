/// `[poll]`: HTTP polling sessions (docs/protocol.md).
public struct PollSettings: Sendable, Equatable {
    /// Seconds a node keeps a session without a poll there (then its buffer is dropped).
    public var sessionTTL: Int = 120
    /// Longest `wait` honoured, in seconds (larger values are clamped).
    public var maxWait: Int = 30
    /// Most messages one answer carries (larger `max` values are clamped). Large enough that a
    /// poller catching up after a burst takes it in a few round trips, as Nchan's multipart
    /// answers do; an inbox subscription still hands out at most `inbox.prefetch` at a time.
    public var maxBatch: Int = 1000
    /// Bytes of messages one answer carries at most (past them the rest waits for the next
    /// answer; a single larger message still goes): 1,000 messages of up to
    /// `limits.max_message_bytes` each would otherwise make one answer of tens of megabytes.
    public static let maxAnswerBytes = 1 << 20
    /// Seconds a delivered batch stays leased before it is handed back to RabbitMQ.
    public var lease: Int = 60
    /// Live deliveries a node buffers for one session at most (oldest dropped): a poller that
    /// stops polling cannot grow it without bound.
    public var maxLength: Int = 10_000
    /// The origins of the browser pages on other origins allowed to poll and publish (CORS):
    /// none (off), `["*"]` (any), or a list of `scheme://host[:port]`.
    public var corsOrigins: [String] = []

    public init() {}
}

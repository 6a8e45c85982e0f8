/// `[poll]`: HTTP polling sessions (DESIGN §5).
public struct PollSettings: Sendable, Equatable {
    /// Seconds a session's queue lives unused (`x-expires`).
    public var sessionTTL: Int = 120
    /// Longest `wait` honoured, in seconds (larger values are clamped).
    public var maxWait: Int = 30
    /// Most messages one answer carries (larger `max` values are clamped).
    public var maxBatch: Int = 100
    /// Seconds a delivered batch stays leased before it is handed back to RabbitMQ.
    public var lease: Int = 60
    /// Messages a live session's queue keeps at most (`x-max-length`, oldest dropped): a
    /// poller that never acks or stops polling cannot grow it without bound.
    public var maxLength: Int = 10_000
    /// `Access-Control-Allow-Origin` for browsers on other origins: "" (off), "*", or one origin.
    public var corsOrigin: String = ""

    public init() {}
}

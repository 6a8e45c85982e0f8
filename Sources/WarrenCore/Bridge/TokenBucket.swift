/// A token bucket: `rate` tokens a second up to `burst`. A value type with an explicit
/// clock, so it is unit-tested without waiting.
public struct TokenBucket: Sendable, Equatable {
    public let rate: Double
    public let burst: Double
    public private(set) var tokens: Double
    private var updatedAt: UInt64

    public init(rate: Double, burst: Double, now: UInt64) {
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.updatedAt = now
    }

    /// Takes `count` tokens if there are that many; otherwise takes none.
    public mutating func take(_ count: Int, now: UInt64) -> Bool {
        refill(now: now)
        guard tokens >= Double(count) else { return false }
        tokens -= Double(count)
        return true
    }

    /// Whether the bucket has been full long enough that forgetting it changes nothing.
    public func isFull(now: UInt64) -> Bool {
        var copy = self
        copy.refill(now: now)
        return copy.tokens >= burst
    }

    private mutating func refill(now: UInt64) {
        guard now > updatedAt else { return }
        tokens = min(burst, tokens + Double(now - updatedAt) / 1e9 * rate)
        updatedAt = now
    }
}

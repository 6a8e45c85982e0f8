import NIOCore

/// Capped exponential backoff with full jitter between reconnect attempts.
public struct RecoveryPolicy: Sendable, Equatable {
    public var enabled: Bool = true
    public var initialDelay: TimeAmount = .milliseconds(100)
    public var maxDelay: TimeAmount = .seconds(30)
    public var multiplier: Double = 2

    public init(enabled: Bool = true, initialDelay: TimeAmount = .milliseconds(100), maxDelay: TimeAmount = .seconds(30),
                multiplier: Double = 2) {
        self.enabled = enabled
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.multiplier = multiplier
    }

    /// The delay before attempt `attempt` (0-based): uniformly random in
    /// [cap/2, cap], where cap = min(maxDelay, initialDelay × multiplier^attempt).
    /// Half the cap is kept so that a fleet neither stampedes nor retries at once.
    public func delay<G: RandomNumberGenerator>(attempt: Int, using generator: inout G) -> TimeAmount {
        let base = Double(initialDelay.nanoseconds) * power(multiplier, min(attempt, 62))
        let cap = min(Double(maxDelay.nanoseconds), base)
        let jittered = Double.random(in: (cap / 2)...max(cap, cap / 2 + 1), using: &generator)
        return .nanoseconds(Int64(jittered))
    }

    public func delay(attempt: Int) -> TimeAmount {
        var rng = SystemRandomNumberGenerator()
        return delay(attempt: attempt, using: &rng)
    }
}

/// `base` to a whole power, without Foundation.
private func power(_ base: Double, _ exponent: Int) -> Double {
    var result = 1.0
    for _ in 0..<max(exponent, 0) { result *= base }
    return result
}

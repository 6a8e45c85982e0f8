import AMQPClient
import Atomics
import Logging

/// Keeps envelopes larger than `limits.max_message_bytes` (docs/protocol.md) away from clients and the
/// store when they come from the broker, where an AMQP publisher may send anything up to the
/// broker's `max_message_size` (128 MiB by default). Warren's own publishes (`app_id=warren`
/// and the body an envelope as Warren writes them: ``EnvelopeAMQPMapping/isOwnEnvelope(_:messageID:routingKey:)``)
/// go on up to the largest limit a node can have (``BridgeLimits/largestMessageBytes``): a Warren
/// node admitted them under its limit, and the guarantee that an acknowledged publish reaches
/// every inbox must hold even if nodes' limits differ. A plain AMQP client's message is measured
/// as the envelope clients would get.
///
/// Such a message would not only be useless to clients: over `limits.outbound_hard_cap_bytes`
/// it closes every socket it is written to (4008), and an inbox copy, redelivered at each
/// reconnect, would close the same socket again forever. So a live copy is dropped, an inbox
/// copy is rejected without requeue (dead-lettered when the operator set a dead-letter exchange
/// on the inbox queues, else discarded), a store copy is not kept; each is counted as
/// `warren_dropped_total{reason="too_large"}` (live and inbox) and logged, the first and every
/// thousandth.
public final class EnvelopeSizeGuard: Sendable {
    public let maxBytes: Int
    let logger: Logger
    private let refused = ManagedAtomic<Int>(0)

    public init(maxBytes: Int, logger: Logger) {
        self.maxBytes = maxBytes
        self.logger = logger
    }

    /// True when `message`, whose envelope is `bytes` long (`own`: Warren's own publish), may go
    /// on; otherwise the refusal is counted and logged.
    @inline(__always)
    public func admits(_ bytes: Int, own: Bool, of message: AMQPMessage, path: StaticString, metrics: WarrenMetrics?) -> Bool {
        if bytes <= maxBytes || (own && bytes <= BridgeLimits.largestMessageBytes) { return true }
        refuse(bytes, routingKey: message.routingKey, path: path, metrics: metrics)
        return false
    }

    private func refuse(_ bytes: Int, routingKey: String, path: StaticString, metrics: WarrenMetrics?) {
        metrics?.dropped(routingKey, .tooLarge)
        let n = refused.wrappingIncrementThenLoad(ordering: .relaxed)
        guard n == 1 || n % 1000 == 0 else { return }
        logger.warning("a message from the broker is larger than limits.max_message_bytes; not handed on",
                       metadata: ["path": "\(path)", "bytes": "\(bytes)", "limit": "\(maxBytes)", "count": "\(n)"])
    }

    /// Oversized messages refused so far.
    public var refusedCount: Int { refused.load(ordering: .relaxed) }

    /// Admits everything (tests that do not exercise the limit).
    public static func unlimited() -> EnvelopeSizeGuard { EnvelopeSizeGuard(maxBytes: .max, logger: Logger(label: "warren.size")) }
}

import AMQPClient
import Atomics

/// A channel of the node's own — the publishing channel, the live queue's binding channel —
/// replaced when the broker closes it.
///
/// A channel error (a 404, or a 406 such as a message above the broker's `max_message_size`)
/// closes an AMQP channel for good: every later call on it fails. A client's bad luck must not
/// leave the whole node unable to publish until it restarts, so the channel is opened afresh
/// (``replace(_:)``); calls made meanwhile fail as they did, and the next ones use the new
/// channel. A link loss is not this: the AMQP client's recovery reopens the same channel.
/// Reading ``channel`` is one atomic load: it is on the publish path.
public final class ReplaceableChannel: Sendable {
    private final class Holder: AtomicReference, Sendable {
        let channel: any BrokerChannel
        init(_ channel: any BrokerChannel) { self.channel = channel }
    }

    private let current: ManagedAtomic<Holder>
    private let open: (@Sendable () async throws -> any BrokerChannel)?

    /// `open` makes a replacement, set up as the first one was (confirm mode, say); without it
    /// the channel is never replaced.
    public init(_ channel: any BrokerChannel, open: (@Sendable () async throws -> any BrokerChannel)? = nil) {
        self.current = ManagedAtomic(Holder(channel))
        self.open = open
    }

    /// The channel to use now.
    public var channel: any BrokerChannel { current.load(ordering: .acquiring).channel }

    /// Whether the broker closed `channel` with a channel error (not this client, not a link loss).
    public static func closedByBroker(_ channel: any BrokerChannel) -> Bool {
        if case .channelClosed = channel.closeReason { return true }
        return false
    }

    /// Replaces `closed` with a freshly opened channel, unless it is not the current one any
    /// more (another caller replaced it) or was not closed by the broker; returns the channel to
    /// use now. `knownClosed`: the caller heard the broker's close (a consumer of the channel
    /// ended with it), which the channel itself may not show yet.
    @discardableResult
    public func replace(_ closed: any BrokerChannel, knownClosed: Bool = false) async throws -> any BrokerChannel {
        let holder = current.load(ordering: .acquiring)
        guard holder.channel === closed, knownClosed || Self.closedByBroker(closed), let open else { return holder.channel }
        return try await swap(holder, for: open()).now
    }

    /// Puts a freshly opened channel in place of `stale`, which the broker did not close but
    /// which misbehaves (see ``Publisher``), and returns it; nil when `stale` is not the current
    /// one any more or channels are never replaced. The caller closes `stale` once what is in
    /// flight on it is answered.
    public func rotate(_ stale: any BrokerChannel) async throws -> (any BrokerChannel)? {
        let holder = current.load(ordering: .acquiring)
        guard holder.channel === stale, let open else { return nil }
        let (now, swapped) = try await swap(holder, for: open())
        return swapped ? now : nil
    }

    /// `fresh` in place of `holder`'s channel, unless another caller replaced it first (then
    /// `fresh` is closed); the channel to use now, and whether it is `fresh`.
    private func swap(_ holder: Holder, for fresh: any BrokerChannel) async -> (now: any BrokerChannel, swapped: Bool) {
        let (exchanged, now) = current.compareExchange(expected: holder, desired: Holder(fresh), ordering: .acquiringAndReleasing)
        if exchanged { return (fresh, true) }
        try? await fresh.close()
        return (now.channel, false)
    }
}

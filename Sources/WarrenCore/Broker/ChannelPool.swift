import AMQPClient
import NIOConcurrencyHelpers
import NIOCore

/// Long-lived channels spread over the node's broker connections (docs/protocol.md).
///
/// A few administration channels carry declarations, bindings and deletes; consumers share a
/// fixed number of consumption channels per prefetch value (the prefetch is set once per
/// channel, with `global = false`, so it applies to each consumer on it and is restored by the
/// AMQP client's recovery). Slots are opened lazily, slot `i` on connection `i % count`, and a
/// channel the broker closed (a channel error) is replaced at its next use. A consumer asking
/// near an event loop gets the next slot whose connection runs on that loop, if any does. However many
/// clients a node holds, it opens `administrationCount + consumptionCount × prefetch values`
/// channels, so the broker's channel limit never bounds them.
public final class ChannelPool: ChannelSource {
    public let connections: [AMQPConnection]
    let administrationCount: Int
    let consumptionCount: Int

    private struct Slots {
        var administration: [AMQPChannel?]
        var consumption: [Int: [AMQPChannel?]] = [:]
        var nextAdministration = 0
        var nextConsumption: [Int: Int] = [:]
    }
    private let slots: NIOLockedValueBox<Slots>

    public init(connections: [AMQPConnection], administrationChannels: Int = 4, consumptionChannels: Int = 16) {
        precondition(!connections.isEmpty)
        self.connections = connections
        self.administrationCount = max(1, administrationChannels)
        self.consumptionCount = max(1, consumptionChannels)
        self.slots = NIOLockedValueBox(Slots(administration: Array(repeating: nil, count: max(1, administrationChannels))))
    }

    /// How many channels are open now (for tests and `/v1/stats`).
    public var openChannels: Int {
        slots.withLockedValue { s in
            s.administration.compactMap { $0 }.count + s.consumption.values.reduce(0) { $0 + $1.compactMap { $0 }.count }
        }
    }

    public func administration() async throws -> any BrokerChannel {
        let (index, existing) = slots.withLockedValue { s -> (Int, AMQPChannel?) in
            let i = s.nextAdministration % administrationCount
            s.nextAdministration &+= 1
            return (i, s.administration[i])
        }
        if let existing, existing.closeReason == nil { return existing }
        let channel = try await connections[index % connections.count].openChannel()
        return keep(channel) { s, use in use(&s.administration[index]) }
    }

    public func consumption(prefetch: Int, near loop: (any EventLoop)?) async throws -> any BrokerChannel {
        let (index, existing) = slots.withLockedValue { s -> (Int, AMQPChannel?) in
            let next = s.nextConsumption[prefetch] ?? 0
            s.nextConsumption[prefetch, default: 0] &+= 1
            let i = slot(from: next, near: loop)
            if s.consumption[prefetch] == nil { s.consumption[prefetch] = Array(repeating: nil, count: consumptionCount) }
            return (i, s.consumption[prefetch]![i])
        }
        if let existing, existing.closeReason == nil { return existing }
        let channel = try await connection(forConsumptionSlot: index).openChannel()
        do {
            try await channel.basicQos(prefetchCount: UInt16(clamping: max(1, prefetch)))
        } catch {
            try? await channel.close()
            throw error
        }
        return keep(channel) { s, use in use(&s.consumption[prefetch]![index]) }
    }

    /// The first consumption slot from `next` on (round robin) whose connection runs on `loop`;
    /// `next`'s own slot when none does or no loop is asked for.
    private func slot(from next: Int, near loop: (any EventLoop)?) -> Int {
        if let loop {
            for k in 0..<consumptionCount {
                let i = (next &+ k) % consumptionCount
                if let l = connection(forConsumptionSlot: i).eventLoop, l === loop { return i }
            }
        }
        return next % consumptionCount
    }

    private func connection(forConsumptionSlot index: Int) -> AMQPConnection {
        connections[(administrationCount + index) % connections.count]
    }

    /// Puts a freshly opened channel into its slot, unless another caller filled the slot with
    /// a usable channel first: then that one is used and this one closed.
    private func keep(_ channel: AMQPChannel,
                      _ slot: (inout Slots, (inout AMQPChannel?) -> AMQPChannel) -> AMQPChannel) -> AMQPChannel {
        let chosen = slots.withLockedValue { s in
            slot(&s) { current in
                if let current, current.closeReason == nil { return current }
                current = channel
                return channel
            }
        }
        if chosen !== channel { Task { try? await channel.close() } }
        return chosen
    }
}

/// A subscription's deliveries, in order. An inbox delivery is acknowledged when the iteration
/// moves past it (the loop body finished and asked for the next one), so one the application
/// did not finish with comes again after a reconnect.
public struct Subscription: AsyncSequence, Sendable {
    public typealias Element = Delivery

    public let id: String
    public let pattern: String
    public let mode: SubscriptionMode
    let stream: AsyncStream<Delivery>
    let client: WarrenClient

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: stream.makeAsyncIterator(), client: client, subscription: id, mode: mode)
    }

    /// Ends the subscription (an inbox queue stays, keeping what arrives meanwhile).
    public func cancel() async {
        await client.unsubscribe(id)
    }

    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<Delivery>.Iterator
        let client: WarrenClient
        let subscription: String
        let mode: SubscriptionMode
        var handedOut: Delivery?

        public mutating func next() async -> Delivery? {
            if let previous = handedOut {
                handedOut = nil
                await client.acknowledge(previous)
            }
            while let delivery = await base.next() {
                guard await client.handOut(delivery) else { continue }
                if mode == .inbox { handedOut = delivery }
                return delivery
            }
            return nil
        }
    }
}

import NIOCore

/// One live message's fan-out to the subscribers it matched: the matched subscriber sets as
/// the trie holds them (shared, not copied), the message's client envelope, and what every
/// delivery of it carries. Each event loop takes its own share (``deliver(loop:current:)``), building
/// its own `msg` frame per subscription id, so the broker connection's loop hands the message
/// to the other loops before it touches a single subscriber: with 500 poll sessions on a room,
/// the grouping of subscribers by loop on the broker's thread had kept every loop's share
/// waiting ~90 µs more per message (BENCHMARKS.md, 2026-12-06).
struct LiveFanOut: Sendable {
    let matched: [Set<LiveSubscriber>]
    let envelope: ByteBuffer
    let routeKey: RouteKey
    let routeClass: RouteClass
    let acceptedAt: Int64
    let metrics: WarrenMetrics

    /// Delivers to the subscribers living on loop `id`; nil: to those without a loop of their
    /// own and those on `current` (the broker connection's loop, which runs this). Counted once
    /// per message, share and frontend, not per delivery (no metric lock per socket).
    func deliver(loop id: ObjectIdentifier?, current: ObjectIdentifier? = nil) {
        var counts = FanOutCounts()
        // One frame per distinct subscription id (clients mostly use the same few ids), so the
        // same bytes go to every socket: looked up only when the id changes from one
        // subscriber to the next.
        var frames: [String: LiveDelivery] = [:]
        var currentID: String?
        var delivery: LiveDelivery?
        for subscribers in matched {
            for subscriber in subscribers {
                if let id {
                    guard subscriber.loopID == id else { continue }
                } else if let own = subscriber.loopID, own != current {
                    continue
                }
                guard let receiver = subscriber.receiver else { continue }
                if subscriber.subscriptionID != currentID {
                    currentID = subscriber.subscriptionID
                    delivery = frames[subscriber.subscriptionID] ?? frame(for: subscriber.subscriptionID, into: &frames)
                }
                if let frontend = receiver.deliverLive(delivery!) { counts.add(frontend, bytes: delivery!.frame.readableBytes) }
            }
        }
        counts.record(on: metrics, route: routeClass, acceptedAt: acceptedAt)
    }

    private func frame(for subscriptionID: String, into frames: inout [String: LiveDelivery]) -> LiveDelivery {
        let frame = ByteBuffer(bytes: ServerFrame.message(sub: subscriptionID, envelope: envelope.readableBytesView, redelivered: false))
        let delivery = LiveDelivery(frame: frame, routeKey: routeKey, routeClass: routeClass, acceptedAt: acceptedAt)
        frames[subscriptionID] = delivery
        return delivery
    }

    /// The same fan-out with its own copy of the envelope, for another loop: the two cores do not
    /// take turns on one buffer's reference count for every delivery.
    func copied() -> LiveFanOut {
        LiveFanOut(matched: matched, envelope: ByteBuffer(bytes: envelope.readableBytesView), routeKey: routeKey,
                   routeClass: routeClass, acceptedAt: acceptedAt, metrics: metrics)
    }
}

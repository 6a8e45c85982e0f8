import Atomics
import NIOConcurrencyHelpers
import NIOCore

/// A recovering subscription's live receiver: from the moment its binding is in place, the
/// live deliveries it matches are held here while the store is read and the replay goes out;
/// then ``release(skipping:)`` sends those the replay did not carry, in the order they came,
/// and every later one passes straight on to the session. So the client gets the replay, then
/// the live stream, with no gap and no message twice at the seam.
///
/// What waits here is bounded like a client's output: past `maxBytes` the session is closed
/// as a slow consumer when released.
final class HeldLiveDeliveries: LiveReceiver, Sendable {
    let session: ClientSession
    let maxBytes: Int
    let liveLoop: (any EventLoop)?
    /// Set once released: deliveries then pass on without the lock.
    private let passing = ManagedAtomic(false)
    private let held = NIOLockedValueBox<(deliveries: [LiveDelivery], bytes: Int, overflowed: Bool, released: Bool)>(([], 0, false, false))

    init(session: ClientSession, maxBytes: Int) {
        self.session = session
        self.maxBytes = maxBytes
        self.liveLoop = session.liveLoop
    }

    func deliverLive(_ delivery: LiveDelivery) -> Frontend? {
        if passing.load(ordering: .acquiring) { return session.deliverLive(delivery) }
        let released = held.withLockedValue { h -> Bool in
            if h.released { return true }
            if h.bytes + delivery.frame.readableBytes > maxBytes {
                h.overflowed = true
            } else {
                h.deliveries.append(delivery)
                h.bytes += delivery.frame.readableBytes
            }
            return false
        }
        // Held: counted when it goes out.
        return released ? session.deliverLive(delivery) : nil
    }

    /// Sends what was held but the messages `replayed` carried, then lets every later delivery
    /// through; returns the deliveries sent, for the metrics, and whether more came than could
    /// be held (the session is then closed as a slow consumer).
    func release(skipping replayed: Set<String>) -> (sent: [LiveDelivery], overflowed: Bool) {
        held.withLockedValue { h in
            // Under the lock: a delivery arriving now waits, and goes out after these.
            var sent: [LiveDelivery] = []
            if !h.overflowed {
                for delivery in h.deliveries where !replayed.contains(Self.envelopeID(delivery.frame) ?? "") {
                    guard session.deliverLive(delivery) != nil else { break }
                    sent.append(delivery)
                }
            }
            h.deliveries = []
            h.released = true
            passing.store(true, ordering: .releasing)
            return (sent, h.overflowed)
        }
    }

    /// The envelope id in a `msg` frame (held deliveries only: parsed once each, at the seam).
    static func envelopeID(_ frame: ByteBuffer) -> String? {
        (try? JSONParser.parse(frame.readableBytesView))?["env"]?["id"]?.stringValue
    }
}

import Atomics
import NIOConcurrencyHelpers
import NIOCore

/// A recovering subscription's live receiver: from the moment its binding is in place, the
/// live deliveries it matches are held here while the store is read and the replay goes out;
/// then ``release(skipping:)`` sends those the replay did not carry, in the order they came,
/// and every later one passes on to the session. So the client gets the replay, then the live
/// stream, with no gap and no message twice at the seam.
///
/// The store can be ahead of the live path (a node whose live queue is backed up behind
/// thousands of sockets): a message the replay carried may come live only after the release.
/// So the replayed messages that no held delivery matched and that may have been routed after
/// the binding (their ids minted no more than ``lateTolerance`` before it) stay `pending`: a
/// live delivery of one of them is dropped; each live delivery forgets those minted more than
/// ``lateTolerance`` before it; once none is left, deliveries pass without a look.
///
/// What waits here is bounded like a client's output: past `maxBytes` the session is closed
/// as a slow consumer when released.
final class HeldLiveDeliveries: LiveReceiver, Sendable {
    let session: ClientSession
    let maxBytes: Int
    let liveLoop: (any EventLoop)?
    /// Set once released: deliveries then pass on without the lock.
    private let passing = ManagedAtomic(false)
    private let held = NIOLockedValueBox(State())
    /// When the subscription was made (before its binding), Unix ms.
    let boundAfter: Int64

    /// How long before the binding a message's id may have been minted and the message still be
    /// routed after it (a publish held up on its way to the broker), in ms.
    static let lateTolerance: Int64 = 2_000

    struct State {
        var deliveries: [LiveDelivery] = []
        var bytes = 0
        var overflowed = false
        var released = false
        /// Replayed messages that may still come live, by id, with the time their id carries.
        var pending: [String: Int64] = [:]
    }

    init(session: ClientSession, maxBytes: Int, now: Int64 = WallClock.milliseconds()) {
        self.session = session
        self.maxBytes = maxBytes
        self.liveLoop = session.liveLoop
        boundAfter = now
    }

    func deliverLive(_ delivery: LiveDelivery) -> Frontend? {
        if passing.load(ordering: .acquiring) { return session.deliverLive(delivery) }
        enum Next { case hold, drop, pass }
        let next = held.withLockedValue { h -> Next in
            guard h.released else {
                if h.bytes + delivery.frame.readableBytes > maxBytes {
                    h.overflowed = true
                } else {
                    h.deliveries.append(delivery)
                    h.bytes += delivery.frame.readableBytes
                }
                return .hold
            }
            guard let id = Self.envelopeID(delivery.frame) else { return .pass }
            if h.pending.removeValue(forKey: id) != nil {
                if h.pending.isEmpty { passing.store(true, ordering: .releasing) }
                return .drop
            }
            if let time = SortKey.time(of: id, now: Int64.max / 2) {
                h.pending = h.pending.filter { $0.value >= time - Self.lateTolerance }
            }
            if h.pending.isEmpty { passing.store(true, ordering: .releasing) }
            return .pass
        }
        // Held: counted when it goes out; dropped: the replay carried it.
        return next == .pass ? session.deliverLive(delivery) : nil
    }

    /// Sends what was held but the messages `replayed` carried, then lets every later delivery
    /// through; returns the deliveries sent, for the metrics, and whether more came than could
    /// be held (the session is then closed as a slow consumer).
    func release(skipping replayed: Set<String>) -> (sent: [LiveDelivery], overflowed: Bool) {
        held.withLockedValue { h in
            // Under the lock: a delivery arriving now waits, and goes out after these.
            var sent: [LiveDelivery] = []
            var unmatched = replayed
            if !h.overflowed {
                for delivery in h.deliveries {
                    let id = Self.envelopeID(delivery.frame) ?? ""
                    if unmatched.remove(id) != nil || replayed.contains(id) { continue }
                    guard session.deliverLive(delivery) != nil else { break }
                    sent.append(delivery)
                }
            }
            for id in unmatched {
                if let time = SortKey.time(of: id, now: Int64.max / 2), time >= boundAfter - Self.lateTolerance { h.pending[id] = time }
            }
            h.deliveries = []
            h.released = true
            if h.pending.isEmpty || h.overflowed { passing.store(true, ordering: .releasing) }
            return (sent, h.overflowed)
        }
    }

    /// The envelope id in a `msg` frame, as Warren writes it (`…"env":{"v":1,"id":"<id>"…`: a
    /// client's subscription id before it cannot hold that text unescaped); parsed when the
    /// frame is written otherwise.
    static func envelopeID(_ frame: ByteBuffer) -> String? {
        let marker = #""env":{"v":1,"id":""#.utf8
        let found: String? = frame.withUnsafeReadableBytes { bytes in
            guard let start = bytes.firstRange(of: marker)?.upperBound,
                  let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
        return found ?? (try? JSONParser.parse(frame.readableBytesView))?["env"]?["id"]?.stringValue
    }
}

import NIOConcurrencyHelpers
import NIOCore
@testable import WarrenCore

/// A live receiver with a loop of its own (as a poll session's output has): it keeps the
/// frames it is handed and whether each came on that loop.
final class LoopedLiveReceiver: LiveReceiver {
    let loop: any EventLoop
    private let frames = NIOLockedValueBox<[(body: String, onLoop: Bool)]>([])
    var bodies: [String] { frames.withLockedValue { $0.map(\.body) } }
    var allOnLoop: Bool { frames.withLockedValue { $0.allSatisfy(\.onLoop) } }

    init(loop: any EventLoop) { self.loop = loop }

    var liveLoop: (any EventLoop)? { loop }

    func deliverLive(_ delivery: LiveDelivery) -> Frontend? {
        let onLoop = loop.inEventLoop
        frames.withLockedValue { $0.append((String(buffer: delivery.frame), onLoop)) }
        return .poll
    }
}

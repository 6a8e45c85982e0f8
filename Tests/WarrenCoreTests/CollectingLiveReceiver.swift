import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import WarrenCore

/// A live receiver that keeps the frames it is handed.
final class CollectingLiveReceiver: LiveReceiver {
    private let frames = NIOLockedValueBox<[String]>([])
    var bodies: [String] { frames.withLockedValue { $0 } }

    func deliverLive(_ delivery: LiveDelivery) -> Frontend? {
        frames.withLockedValue { $0.append(String(buffer: delivery.frame)) }
        return .ws
    }
}

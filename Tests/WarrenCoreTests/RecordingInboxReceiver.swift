import AMQPClient
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import WarrenCore

/// Records what an inbox consumer hands its session.
final class RecordingInboxReceiver: InboxReceiver {
    private let state = NIOLockedValueBox<(ids: [String], redelivered: [Bool], handedBack: [Int], envelopes: [String])>(([], [], [], []))
    var ids: [String] { state.withLockedValue { $0.ids } }
    /// The envelopes handed on, as text.
    var envelopes: [String] { state.withLockedValue { $0.envelopes } }
    var redelivered: [Bool] { state.withLockedValue { $0.redelivered } }
    var handedBack: [Int] { state.withLockedValue { $0.handedBack } }

    func deliverInbox(envelopeID: String, envelope: ByteBuffer, routeKey: String, routeClass: RouteClass, redelivered: Bool,
                      acceptedAt: Int64) {
        state.withLockedValue {
            $0.ids.append(envelopeID)
            $0.redelivered.append(redelivered)
            $0.envelopes.append(String(buffer: envelope))
        }
    }
    func inboxEnded(_ error: AMQPError?) {}
    func inboxHandedBack(count: Int) { state.withLockedValue { $0.handedBack.append(count) } }
}

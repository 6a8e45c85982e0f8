import NIOConcurrencyHelpers
@testable import WarrenCore

/// A poll as the HTTP edge takes it, for tests that await its answer: opened on this node
/// first when it is not open here (``PollService/prepare(session:user:policy:home:)``), then
/// taken through the one poll API with a sink whose answer is awaited.
extension PollService {
    func poll(session token: String, user: String, policy: AccessPolicy, wait: Int, max: Int, ack: String?) async throws(ProtocolError)
        -> PollAnswer
    {
        var last: LastPolled?
        for _ in 0..<3 {
            let sink = AwaitedSink()
            switch poll(session: token[...], user: user, policy: policy, wait: wait, max: max, ack: ack, to: sink, last: &last) {
            case .elsewhere:
                try await prepare(session: token, user: user, policy: policy)
            case .answered, .parked:
                return await sink.answer()
            }
        }
        throw ProtocolError(.unavailable, "the session would not open here", ref: nil)
    }
}

/// A poll answer sink whose one answer is awaited.
final class AwaitedSink: PollAnswerSink {
    private let state = NIOLockedValueBox((answer: PollAnswer?.none, waiter: CheckedContinuation<PollAnswer, Never>?.none))

    var isAlive: Bool { true }

    func answer(_ taken: PollAnswer) {
        let waiter = state.withLockedValue { s -> CheckedContinuation<PollAnswer, Never>? in
            s.answer = taken
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: taken)
    }

    func answer() async -> PollAnswer {
        await withCheckedContinuation { c in
            let ready = state.withLockedValue { s -> PollAnswer? in
                if s.answer == nil { s.waiter = c }
                return s.answer
            }
            if let ready { c.resume(returning: ready) }
        }
    }
}

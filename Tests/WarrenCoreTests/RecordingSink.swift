import NIOConcurrencyHelpers
@testable import WarrenCore

/// A poll answer sink that keeps what it is given.
final class RecordingSink: PollAnswerSink {
    private let state = NIOLockedValueBox((alive: true, answers: [PollAnswer]()))

    var alive: Bool {
        get { state.withLockedValue { $0.alive } }
        set { state.withLockedValue { $0.alive = newValue } }
    }

    var isAlive: Bool { alive }

    var answers: [PollAnswer] { state.withLockedValue { $0.answers } }

    func answer(_ taken: PollAnswer) { state.withLockedValue { $0.answers.append(taken) } }
}

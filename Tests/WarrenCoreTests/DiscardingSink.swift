import WarrenCore

/// A poll's answer nobody reads (a client that is always there).
final class DiscardingSink: PollAnswerSink {
    var isAlive: Bool { true }
    func answer(_ taken: PollAnswer) {}
}

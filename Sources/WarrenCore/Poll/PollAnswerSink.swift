/// Where a poll taken on an event loop is answered
/// (``PollService/pollOnLoop(session:user:policy:wait:max:ack:to:last:repeated:now:)``): a poller's connection,
/// made once and kept for all its polls, so that taking a poll makes no closures for its answer
/// (two per poll were, with their captures, ~1 % of Warren's samples in the poll benchmark).
public protocol PollAnswerSink: AnyObject, Sendable {
    /// Whether the client is still there when its answer is taken (else nothing is taken for it).
    var isAlive: Bool { get }
    /// The poll's answer: called exactly once per poll, from any thread.
    func answer(_ taken: PollAnswer)
}

/// A poll taken on an event loop (``PollService/pollOnLoop(session:user:policy:wait:max:ack:to:last:repeated:now:)``),
/// as ``PollOutput`` keeps it while it is parked: what its answer takes and where it goes. Its
/// answer is taken by whichever thread ends its wait, under the output's lock, with no closure
/// made per poll.
public struct PollRequest: Sendable {
    /// Where the answer goes (when it is not ``PollAnswerSink/isAlive`` by then, nothing is taken).
    let sink: any PollAnswerSink
    /// Deliveries an answer takes at most (clamped to `poll.max_batch`).
    let max: Int
    /// The node making the answer (its cursor's).
    let node: String
    /// How long the answer's inbox deliveries are leased (ms).
    let leaseMilliseconds: Int64
}

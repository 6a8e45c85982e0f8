import NIOCore

/// What the recovering sockets of one run (``RecoveringSocketHandler``) learned, per client:
/// the id of the last envelope each got (the `since` of its next subscription), when its
/// resubscription was answered and how, and when it was live again.
///
/// Like ``Recorder`` it lives on one event loop (the recorder's) and is touched only there.
public final class RecoveryLedger: @unchecked Sendable {
    public let loop: any EventLoop
    /// The id of the last envelope client `i` got, or where Warren said its subscription began.
    public private(set) var lastID: [String?]
    /// When client `i`'s resubscription (the one sent with `since`) was answered (``BenchClock``).
    public private(set) var answeredAt: [UInt64]
    /// When client `i` first got a message published after that answer: it is live again.
    public private(set) var liveAt: [UInt64]
    /// How client `i`'s resubscription was answered (nil: not yet, or not a resubscription).
    public private(set) var wasRecovered: [Bool?]
    /// Resubscriptions answered `recovered: true`, and the reasons of those answered `false`.
    public private(set) var recovered = 0
    public private(set) var reasons: [String: Int] = [:]

    public init(loop: any EventLoop, clients: Int) {
        self.loop = loop
        lastID = Array(repeating: nil, count: clients)
        answeredAt = Array(repeating: 0, count: clients)
        liveAt = Array(repeating: 0, count: clients)
        wasRecovered = Array(repeating: nil, count: clients)
    }

    func answered(client: Int, at: String?, resumed: Bool, recovered: Bool?, reason: String?, now: UInt64) {
        if lastID[client] == nil { lastID[client] = at }
        guard resumed else { return }
        answeredAt[client] = now
        wasRecovered[client] = recovered == true
        if recovered == true { self.recovered += 1 } else { reasons[reason ?? "none", default: 0] += 1 }
    }

    func delivered(client: Int, id: String?, stamp: Stamp?, now: UInt64) {
        if let id { lastID[client] = id }
        if let stamp, answeredAt[client] != 0, liveAt[client] == 0, stamp.sentNanos > answeredAt[client] { liveAt[client] = now }
    }
}

/// How a live subscription came back after a cut or a move (docs/protocol.md, "Recovery on
/// resubscribe"): the client resubscribes it `since` the last envelope it got.
public enum RecoveryEvent: Sendable, Equatable {
    /// Everything it missed was delivered, in order, before what came live.
    case recovered(subscription: String, pattern: String)
    /// It may have missed messages (`too_many`, `retention`, `store_unavailable`, …): reload
    /// the history it shows.
    case reload(subscription: String, pattern: String, reason: String)
}

/// Recovery on resubscribe (docs/configuration.md, `[recover]`).
public struct RecoverySettings: Sendable, Equatable {
    /// At most this many messages are replayed to one subscription; past it the newest are
    /// sent and the client is told to reload (`too_many`).
    public var maxMessages = 1000
    /// How long a recovery waits for the store's writer to catch up (seconds).
    public var waitSeconds = 5

    /// Rows read at most per recovery, matching or not: a sparse pattern (`#.alice.#`) over a
    /// long gap on a busy store is `too_many` rather than a scan of the whole table.
    public var maxScannedRows: Int { maxMessages * 50 }

    public init() {}
}

/// Why a subscription's `since` could not be honoured in full (docs/protocol.md, "Recovery"):
/// the client is told, and reloads the history it needs.
public enum RecoveryReason: String, Sendable, CaseIterable {
    /// `since` is neither a kept message nor a message id that places itself in time (a UUIDv7).
    case unknownID = "unknown_id"
    /// `since` is older than `store.max_age`: what followed it may have been pruned.
    case retention
    /// The pattern takes routes `store.patterns` does not keep, or the store is off.
    case notStored = "not_stored"
    /// The store did not answer, or its writer was too far behind (`recover.wait`).
    case storeUnavailable = "store_unavailable"
    /// More than `recover.max_messages` came after `since`: the newest are sent.
    case tooMany = "too_many"
}

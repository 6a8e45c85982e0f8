/// A send with a `(from, cid)` a node remembers (``DedupCache``), as it hands it to a node that
/// starts or that it hears of for the first time (``PresenceAnnouncement/sends(node:entries:)``):
/// a retry that reaches that node within docs/protocol.md's five minutes gets the first ids too.
public struct RecentSend: Sendable, Equatable {
    public let from: String
    public let cid: String
    public let earlier: DedupCache.Earlier

    public init(from: String, cid: String, earlier: DedupCache.Earlier) {
        self.from = from
        self.cid = cid
        self.earlier = earlier
    }
}

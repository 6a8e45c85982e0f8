/// What nodes tell each other about presence, on the fanout exchange `<amqp.exchange>.presence`
/// (JSON): a node's whole state (periodically), one change, goodbye (drained), that a poll
/// session was deleted (every node that has it open ends it, and its presence, at once), or a
/// send with a cid it is writing or confirmed. One kind goes to a single node's queue instead: a poll's ack
/// of a cursor that node made.
///
/// A change says whether its node published the join or leave envelope (`"published":false`
/// when it did not, because it believed another node held the entry; absent means it did).
public enum PresenceAnnouncement: Sendable, Equatable {
    /// `starting`: the node's first, at its start: every node that hears it answers with its own
    /// state at once (the new node learns of them now, not a third of the timeout later, even
    /// where they still knew it from before a restart).
    case state(node: String, entries: Set<PresenceEntry>, starting: Bool = false)
    case change(node: String, entry: PresenceEntry, present: Bool, published: Bool = true)
    case goodbye(node: String)
    /// `DELETE /v1/poll/<session>` on `node`, for the session with this id.
    case sessionDeleted(node: String, session: String)
    /// A poll on `node` acked `cursor`, which the node named in it made, for the session with
    /// this string (sent to that node alone). `polledAt`: the poll's arrival on `node` (Unix ms);
    /// nil for an ack on its own (`POST …/ack`), or from a node before 2026-11-29.
    case ackForwarded(node: String, session: String, cursor: String, polledAt: Int64? = nil)
    /// `node` confirmed a send of `from`'s with this `cid` and gave it these ids: a retry that
    /// reaches another node (a balancer without stickiness) is answered with them, not published
    /// again (docs/protocol.md's `(from, cid)` rule across nodes).
    case sent(node: String, from: String, cid: String, ids: [String])
    /// `node` is writing a send of `from`'s with this `cid`, `ids[i]` for `routes[i]`: told just
    /// before it, on the channel it goes on (so once any of it is routed, this is too, even if
    /// `node` dies before the confirm). A retry that reaches another node first is published
    /// there with the same ids, which the store keeps once and clients recognise.
    case sending(node: String, from: String, cid: String, routes: [String], ids: [String])
    /// The sends with a cid `node` remembers (docs/protocol.md's five minutes), sent to a node that
    /// starts, or that `node` hears of for the first time, alone (to its queue), in messages of
    /// at most ``maxRecentSends``: a node started again after a client's first try elsewhere
    /// (or one that had gone, and so was told of nothing) answers its retry with the first ids.
    case sends(node: String, entries: [RecentSend])

    /// More entries than this in one state message is not believed.
    public static let maxEntries = 1_000_000
    /// More ids than this in one `sent` is not believed (a publish has at most `limits.max_routes`).
    public static let maxSentIDs = 256
    /// Sends in one `sends` message at most.
    public static let maxRecentSends = 500

    public var node: String {
        switch self {
        case .state(let n, _, _), .change(let n, _, _, _), .goodbye(let n), .sessionDeleted(let n, _), .ackForwarded(let n, _, _, _),
             .sent(let n, _, _, _), .sending(let n, _, _, _, _), .sends(let n, _): return n
        }
    }

    public func encoded() -> [UInt8] {
        var w = JSONWriter(capacity: 128)
        w.raw("{\"node\":")
        w.string(node)
        switch self {
        case .state(_, let entries, let starting):
            w.raw(starting ? ",\"kind\":\"state\",\"starting\":true,\"entries\":[" : ",\"kind\":\"state\",\"entries\":[")
            for (k, e) in entries.sorted().enumerated() {
                if k > 0 { w.raw(",") }
                w.raw("[")
                w.string(e.route)
                w.raw(",")
                w.string(e.user)
                w.raw("]")
            }
            w.raw("]}")
        case .change(_, let e, let present, let published):
            w.raw(present ? ",\"kind\":\"join\",\"route\":" : ",\"kind\":\"leave\",\"route\":")
            w.string(e.route)
            w.raw(",\"user\":")
            w.string(e.user)
            w.raw(published ? "}" : ",\"published\":false}")
        case .goodbye:
            w.raw(",\"kind\":\"bye\"}")
        case .sessionDeleted(_, let session):
            w.raw(",\"kind\":\"deleted\",\"session\":")
            w.string(session)
            w.raw("}")
        case .ackForwarded(_, let session, let cursor, let polledAt):
            w.raw(",\"kind\":\"ack\",\"session\":")
            w.string(session)
            w.raw(",\"cursor\":")
            w.string(cursor)
            if let polledAt {
                w.raw(",\"polled_at\":")
                w.int(polledAt)
            }
            w.raw("}")
        case .sent(_, let from, let cid, let ids):
            w.raw(",\"kind\":\"sent\",\"from\":")
            w.string(from)
            w.raw(",\"cid\":")
            w.string(cid)
            w.raw(",\"ids\":")
            w.strings(ids)
            w.raw("}")
        case .sending(_, let from, let cid, let routes, let ids):
            w.raw(",\"kind\":\"sending\",\"from\":")
            w.string(from)
            w.raw(",\"cid\":")
            w.string(cid)
            w.raw(",\"routes\":")
            w.strings(routes)
            w.raw(",\"ids\":")
            w.strings(ids)
            w.raw("}")
        case .sends(_, let entries):
            w.raw(",\"kind\":\"sends\",\"entries\":[")
            for (k, e) in entries.enumerated() {
                if k > 0 { w.raw(",") }
                w.raw("{\"from\":")
                w.string(e.from)
                w.raw(",\"cid\":")
                w.string(e.cid)
                switch e.earlier {
                case .confirmed(let ids):
                    w.raw(",\"ids\":")
                    w.strings(ids)
                case .attempted(let byRoute):
                    let routes = byRoute.keys.sorted()
                    w.raw(",\"routes\":")
                    w.strings(routes)
                    w.raw(",\"ids\":")
                    w.strings(routes.map { byRoute[$0]! })
                }
                w.raw("}")
            }
            w.raw("]}")
        }
        return w.bytes
    }

    /// Parses and validates a message from the exchange (routes and users must be what Warren
    /// itself would announce); nil for anything else.
    public static func decode(_ bytes: some Collection<UInt8>) -> PresenceAnnouncement? {
        guard let json = try? JSONParser.parse(bytes), let node = json["node"]?.stringValue, RouteKey.isValidWord(node),
              let kind = json["kind"]?.stringValue else { return nil }
        func entry(_ route: JSONValue?, _ user: JSONValue?) -> PresenceEntry? {
            guard let r = route?.stringValue, (try? RouteKey(r)) != nil, let u = user?.stringValue, RouteKey.isValidWord(u) else { return nil }
            return PresenceEntry(route: r, user: u)
        }
        switch kind {
        case "state":
            guard case .array(let items)? = json["entries"], items.count <= maxEntries else { return nil }
            var entries = Set<PresenceEntry>()
            for item in items {
                guard case .array(let pair) = item, pair.count == 2, let e = entry(pair[0], pair[1]) else { return nil }
                entries.insert(e)
            }
            let starting: Bool
            switch json["starting"] {
            case nil: starting = false
            case .bool(let b)?: starting = b
            default: return nil
            }
            return .state(node: node, entries: entries, starting: starting)
        case "join", "leave":
            guard let e = entry(json["route"], json["user"]) else { return nil }
            let published = json["published"]
            guard published == nil || published?.boolValue != nil else { return nil }
            return .change(node: node, entry: e, present: kind == "join", published: published?.boolValue ?? true)
        case "bye":
            return .goodbye(node: node)
        case "deleted":
            guard let session = json["session"]?.stringValue, RouteKey.isValidWord(session) else { return nil }
            return .sessionDeleted(node: node, session: session)
        case "ack":
            guard let session = json["session"]?.stringValue, isSessionString(session), let cursor = json["cursor"]?.stringValue,
                  PollService.node(of: cursor) != nil else { return nil }
            let polledAt = json["polled_at"]
            guard polledAt == nil || polledAt?.intValue != nil else { return nil }
            return .ackForwarded(node: node, session: session, cursor: cursor, polledAt: polledAt?.intValue)
        case "sent", "sending":
            guard let send = recentSend(json, attempted: kind == "sending") else { return nil }
            switch send.earlier {
            case .confirmed(let ids): return .sent(node: node, from: send.from, cid: send.cid, ids: ids)
            case .attempted: return .sending(node: node, from: send.from, cid: send.cid, routes: send.routes, ids: send.ids)
            }
        case "sends":
            guard case .array(let items)? = json["entries"], (1...maxRecentSends).contains(items.count) else { return nil }
            var entries: [RecentSend] = []
            for item in items {
                guard let send = recentSend(item, attempted: item["routes"] != nil) else { return nil }
                entries.append(RecentSend(from: send.from, cid: send.cid, earlier: send.earlier))
            }
            return .sends(node: node, entries: entries)
        default:
            return nil
        }
    }

    /// One send's fields, as `sent` / `sending` and each of `sends`' entries carry them: `from`,
    /// `cid`, `ids` (UUIDs) and, for one not confirmed, `routes` (`ids[i]` for `routes[i]`).
    private static func recentSend(_ json: JSONValue, attempted: Bool)
        -> (from: String, cid: String, routes: [String], ids: [String], earlier: DedupCache.Earlier)?
    {
        guard let from = json["from"]?.stringValue, Envelope.isValidSender(from), let cid = json["cid"]?.stringValue,
              Envelope.isValidCID(cid), case .array(let items)? = json["ids"], (1...maxSentIDs).contains(items.count) else { return nil }
        var ids: [String] = []
        for item in items {
            guard let id = item.stringValue, UUIDv7Generator.isWellFormed(id) else { return nil }
            ids.append(id)
        }
        guard attempted else { return (from, cid, [], ids, .confirmed(ids)) }
        guard case .array(let items)? = json["routes"], items.count == ids.count else { return nil }
        var routes: [String] = []
        for item in items {
            guard let route = item.stringValue, (try? RouteKey(route)) != nil else { return nil }
            routes.append(route)
        }
        return (from, cid, routes, ids, .attempted(Dictionary(zip(routes, ids)) { first, _ in first }))
    }

    /// What a poll session string can be: a signed token (base64url parts joined by dots) no
    /// longer than a poll's URL carries.
    static func isSessionString(_ s: String) -> Bool {
        let n = s.utf8.count
        return n >= 1 && n <= PollSessionCodec.maxTokenBytes && s.utf8.allSatisfy { RouteKey.isWordByte($0) || $0 == UInt8(ascii: ".") }
    }
}

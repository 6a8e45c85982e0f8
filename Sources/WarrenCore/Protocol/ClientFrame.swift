/// A frame from a WebSocket client (docs/protocol.md).
public enum ClientFrame: Sendable, Equatable {
    /// `presence`: announce the user on the route (docs/protocol.md; live, concrete routes only).
    /// `since`: recover what was missed after that message (docs/protocol.md, "Recovery").
    case sub(id: String, pattern: TopicPattern, mode: SubscriptionMode, presence: Bool = false, since: String? = nil)
    case unsub(id: String)
    case pub(PublishRequest)
    case ack(ids: [String])
    case ping
    /// A page of a route's history (docs/protocol.md); `id` is the request's, echoed in the answer.
    case history(id: String, route: String, before: String?, limit: Int?)
    case conversations(id: String)
    /// Moves the read marker on `route` to the envelope `id`.
    case read(route: String, id: String)
    /// Who is present on a route, on every node (docs/protocol.md).
    case presence(id: String, route: String)

    /// Parses one text frame. Errors carry the code and the `ref` of docs/protocol.md.
    public static func parse(_ bytes: some Collection<UInt8>) throws(ProtocolError) -> ClientFrame {
        let json: JSONValue
        do { json = try JSONParser.parse(bytes) } catch {
            throw ProtocolError(.badFrame, "not JSON: \(error)", ref: nil)
        }
        guard case .object = json else { throw ProtocolError(.badFrame, "a frame is a JSON object", ref: nil) }
        guard let op = json["op"]?.stringValue else { throw ProtocolError(.badFrame, "missing op", ref: nil) }
        switch op {
        case "sub":
            let id = try requiredID(json, "id")
            guard let patternText = json["pattern"]?.stringValue else {
                throw ProtocolError(.badFrame, "sub needs a pattern", ref: id)
            }
            let pattern: TopicPattern
            do { pattern = try TopicPattern(patternText) } catch { throw ProtocolError(.badRoute, error.description, ref: id) }
            var mode = SubscriptionMode.live
            if let m = json["mode"], m != .null {
                guard let s = m.stringValue, let parsed = SubscriptionMode(rawValue: s) else {
                    throw ProtocolError(.badFrame, "mode must be live or inbox", ref: id)
                }
                mode = parsed
            }
            var presence = false
            if let p = json["presence"], p != .null {
                guard case .bool(let b) = p else { throw ProtocolError(.badFrame, "presence must be true or false", ref: id) }
                presence = b
            }
            if presence { try Self.checkPresence(pattern, mode: mode, ref: id) }
            let since = try optionalString(json, "since", ref: id)
            if let since, UUIDv7Generator.canonical(since) == nil { throw ProtocolError(.badFrame, "since must be a message id", ref: id) }
            if since != nil, mode != .live { throw ProtocolError(.badFrame, "since is for live subscriptions", ref: id) }
            return .sub(id: id, pattern: pattern, mode: mode, presence: presence, since: since)
        case "unsub":
            return .unsub(id: try requiredID(json, "id"))
        case "pub":
            return .pub(try PublishRequest.parse(json))
        case "ack":
            if let list = json["ids"] {
                guard case .array(let items) = list, !items.isEmpty, items.count <= 1000 else {
                    throw ProtocolError(.badFrame, "ids must be a list of 1-1000 ids", ref: nil)
                }
                var ids: [String] = []
                for item in items {
                    guard let s = item.stringValue, s.utf8.count <= 64 else { throw ProtocolError(.badFrame, "ids must be strings", ref: nil) }
                    ids.append(s)
                }
                return .ack(ids: ids)
            }
            return .ack(ids: [try requiredID(json, "id")])
        case "ping":
            return .ping
        case "history":
            let id = try requiredID(json, "id")
            guard let route = json["route"]?.stringValue else { throw ProtocolError(.badFrame, "history needs a route", ref: id) }
            let before = try optionalString(json, "before", ref: id)
            var limit: Int?
            if let l = json["limit"], l != .null {
                guard let n = l.intValue else { throw ProtocolError(.badFrame, "limit must be an integer", ref: id) }
                limit = Int(clamping: n)
            }
            return .history(id: id, route: route, before: before, limit: limit)
        case "presence":
            let id = try requiredID(json, "id")
            guard let route = json["route"]?.stringValue else { throw ProtocolError(.badFrame, "presence needs a route", ref: id) }
            return .presence(id: id, route: route)
        case "conversations":
            return .conversations(id: try requiredID(json, "id"))
        case "read":
            let id = try requiredID(json, "id")
            guard let route = json["route"]?.stringValue else { throw ProtocolError(.badFrame, "read needs a route", ref: id) }
            return .read(route: route, id: id)
        default:
            throw ProtocolError(.badFrame, "unknown op '\(op.prefix(32))'", ref: nil)
        }
    }

    /// Presence is for a live subscription to one concrete route (no `*` or `#`).
    public static func checkPresence(_ pattern: TopicPattern, mode: SubscriptionMode, ref: String?) throws(ProtocolError) {
        guard mode == .live else { throw ProtocolError(.badFrame, "presence is for live subscriptions", ref: ref) }
        guard (try? RouteKey(pattern.value)) != nil else {
            throw ProtocolError(.badFrame, "presence needs a concrete route (no * or #)", ref: ref)
        }
    }

    static func requiredID(_ json: JSONValue, _ key: String) throws(ProtocolError) -> String {
        guard let v = json[key] else { throw ProtocolError(.badFrame, "missing \(key)", ref: nil) }
        guard let s = v.stringValue, !s.isEmpty, s.utf8.count <= 64 else {
            throw ProtocolError(.badFrame, "\(key) must be a string of 1-64 bytes", ref: nil)
        }
        return s
    }
}

func optionalString(_ json: JSONValue, _ key: String, ref: String? = nil) throws(ProtocolError) -> String? {
    guard let v = json[key], v != .null else { return nil }
    guard let s = v.stringValue else { throw ProtocolError(.badFrame, "\(key) must be a string", ref: ref) }
    return s
}

/// The canonical envelope (docs/protocol.md, version 1): every message, whichever door
/// it came in by, is one of these on the exchange and on every socket.
public struct Envelope: Sendable, Equatable {
    public static let maxHeaders = 32
    public static let maxWordBytes = 64

    public var id: String
    public var route: String
    public var type: String
    public var from: String
    public var via: Via
    /// Unix epoch milliseconds, Warren's clock at acceptance.
    public var ts: Int64
    public var body: JSONValue
    public var cid: String?
    public var transient: Bool
    public var headers: [(key: String, value: String)]

    public init(id: String, route: String, type: String = "text", from: String, via: Via, ts: Int64, body: JSONValue,
                cid: String? = nil, transient: Bool = false, headers: [(key: String, value: String)] = []) {
        self.id = id
        self.route = route
        self.type = type
        self.from = from
        self.via = via
        self.ts = ts
        self.body = body
        self.cid = cid
        self.transient = transient
        self.headers = headers
    }

    public static func == (a: Envelope, b: Envelope) -> Bool {
        a.id == b.id && a.route == b.route && a.type == b.type && a.from == b.from && a.via == b.via && a.ts == b.ts
            && a.body == b.body && a.cid == b.cid && a.transient == b.transient
            && a.headers.count == b.headers.count && zip(a.headers, b.headers).allSatisfy { $0 == $1 }
    }

    /// The wire form: compact JSON with the fields in the contract's order. Encoded
    /// once per message; the same bytes go to the broker and to every socket.
    public func encoded() -> [UInt8] {
        var w = JSONWriter(capacity: 192)
        w.raw("{\"v\":1,\"id\":")
        w.string(id)
        w.raw(",\"route\":")
        w.string(route)
        w.raw(",\"type\":")
        w.string(type)
        w.raw(",\"from\":")
        w.string(from)
        w.raw(",\"via\":")
        w.string(via.rawValue)
        w.raw(",\"ts\":")
        w.int(ts)
        w.raw(",\"body\":")
        w.value(body)
        if let cid {
            w.raw(",\"cid\":")
            w.string(cid)
        }
        if transient { w.raw(",\"transient\":true") }
        if !headers.isEmpty {
            w.raw(",\"headers\":{")
            for (k, h) in headers.enumerated() {
                if k > 0 { w.raw(",") }
                w.string(h.key)
                w.raw(":")
                w.string(h.value)
            }
            w.raw("}")
        }
        w.raw("}")
        return w.bytes
    }

    // MARK: field rules shared by every door

    /// `type`: 1–64 bytes of `[A-Za-z0-9_:-]`.
    public static func isValidType(_ s: String) -> Bool {
        let n = s.utf8.count
        return n >= 1 && n <= maxWordBytes && s.utf8.allSatisfy { RouteKey.isWordByte($0) || $0 == UInt8(ascii: ":") }
    }

    /// `cid`: 1–64 bytes, no control characters.
    public static func isValidCID(_ s: String) -> Bool {
        let n = s.utf8.count
        return n >= 1 && n <= maxWordBytes && s.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
    }

    /// `from` as an AMQP back end names itself (a header, its app id, an envelope body's field):
    /// 1–255 bytes, no control characters. Warren stamps users' own; this keeps a back end's
    /// NUL out of the store (PostgreSQL's text cannot hold one) and out of clients' names.
    public static func isValidSender(_ s: String) -> Bool {
        let n = s.utf8.count
        return n >= 1 && n <= RouteKey.maxBytes && s.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F }
    }

    /// Validates and returns `headers`: a flat object of strings, at most 32 entries.
    public static func parseHeaders(_ value: JSONValue?) throws(EnvelopeError) -> [(key: String, value: String)] {
        guard let value, value != .null else { return [] }
        guard case .object(let members) = value else { throw .badField("headers must be an object of strings") }
        guard members.count <= maxHeaders else { throw .badField("more than \(maxHeaders) headers") }
        var result: [(key: String, value: String)] = []
        for m in members {
            guard case .string(let s) = m.value else { throw .badField("header '\(m.key.prefix(64))' must be a string") }
            guard !m.key.isEmpty, m.key.utf8.count <= 128 else { throw .badField("header names are 1-128 bytes") }
            result.append((m.key, s))
        }
        return result
    }
}

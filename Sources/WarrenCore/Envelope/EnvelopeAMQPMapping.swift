import AMQPClient
import NIOCore

/// The envelope on the AMQP side (docs/protocol.md): how Warren publishes one, and how a
/// message found on the exchange — Warren's own or a plain AMQP client's — becomes one.
public enum EnvelopeAMQPMapping {
    public static let appID = "warren"

    /// Properties for publishing `envelope`: JSON, ids, Warren's app id, `from` / `via` /
    /// `cid` headers; persistent unless transient (then non-persistent with TTL 0).
    public static func properties(for envelope: Envelope) -> BasicProperties {
        // `ts` (ms) rides along as a header so deliveries can be timed without parsing the body.
        var headers: FieldTable = ["from": .string(envelope.from), "via": .string(envelope.via.rawValue), "ts": .int64(envelope.ts)]
        if let cid = envelope.cid { headers["cid"] = .string(cid) }
        return BasicProperties(
            contentType: "application/json",
            headers: headers,
            deliveryMode: envelope.transient ? 1 : 2,
            expiration: envelope.transient ? "0" : nil,
            messageID: envelope.id,
            timestamp: UInt64(max(0, envelope.ts / 1000)),
            type: envelope.type,
            appID: appID)
    }

    /// When Warren accepted a message (ms): the `ts` header of its own publishes, else the AMQP
    /// timestamp. A header that is no time since 1970 and before 10000 (any publisher may set
    /// one) is passed over.
    public static func acceptedAt(_ properties: BasicProperties) -> Int64? {
        if let ts = properties.headers?["ts"]?.intValue, (0...latestMilliseconds).contains(ts) { return ts }
        return properties.timestamp.flatMap(milliseconds)
    }

    /// 9999-12-31T23:59:59.999Z in Unix milliseconds.
    static let latestMilliseconds: Int64 = 253_402_300_799_999

    /// An AMQP `timestamp` (seconds) in milliseconds; nil when that overflows (a publisher's
    /// nonsense, not a time: Warren's clock is used instead).
    static func milliseconds(_ seconds: UInt64) -> Int64? {
        let (ms, overflow) = Int64(clamping: seconds).multipliedReportingOverflow(by: 1000)
        return overflow ? nil : ms
    }

    /// What a delivery from the broker becomes.
    public enum Incoming: Sendable {
        /// Warren's own publish: the body bytes are the envelope, to be passed through untouched.
        case passthrough(ByteBuffer)
        /// Anything else, translated into an envelope (to be encoded once).
        case translated(Envelope)
    }

    /// Translates a delivery. `newID` and `nowMilliseconds` fill in what the message lacks.
    public static func incoming(body: ByteBuffer, properties: BasicProperties, routingKey: String,
                                nowMilliseconds: Int64, newID: () -> String) -> Incoming {
        if properties.appID == appID, isOwnEnvelope(body, messageID: properties.messageID, routingKey: routingKey) {
            return .passthrough(body)
        }
        let bytes = body.readableBytesView
        // A name with a control character (a NUL, say) is not believed.
        let fallbackFrom: String
        if let header = properties.headers?["from"]?.stringValue, Envelope.isValidSender(header) {
            fallbackFrom = header
        } else if let app = properties.appID, Envelope.isValidSender(app) {
            fallbackFrom = app
        } else {
            fallbackFrom = "amqp"
        }
        let propertyID = properties.messageID.flatMap(UUIDv7Generator.canonical)
        let propertyTS = properties.timestamp.flatMap(milliseconds)

        // A body that is itself an envelope keeps its fields.
        if bytes.first == UInt8(ascii: "{"), let json = try? JSONParser.parse(bytes), json["v"]?.intValue == 1,
           let body = json["body"] {
            let type = json["type"]?.stringValue ?? properties.type ?? "text"
            return .translated(Envelope(
                id: json["id"]?.stringValue.flatMap(UUIDv7Generator.canonical) ?? propertyID ?? newID(),
                route: routingKey,
                type: Envelope.isValidType(type) ? type : "raw",
                from: json["from"]?.stringValue.flatMap { Envelope.isValidSender($0) ? $0 : nil } ?? fallbackFrom,
                via: .amqp,
                ts: json["ts"]?.intValue ?? propertyTS ?? nowMilliseconds,
                body: body,
                cid: json["cid"]?.stringValue.flatMap { Envelope.isValidCID($0) ? $0 : nil },
                transient: json["transient"]?.boolValue ?? false,
                headers: (try? Envelope.parseHeaders(json["headers"])) ?? []))
        }

        let type = properties.type.flatMap { Envelope.isValidType($0) ? $0 : nil } ?? "raw"
        return .translated(Envelope(id: propertyID ?? newID(), route: routingKey, type: type, from: fallbackFrom, via: .amqp,
                                    ts: propertyTS ?? nowMilliseconds, body: wrapBody(bytes, contentType: properties.contentType)))
    }

    /// Whether a message marked as Warren's own (`app_id=warren`) is one, as far as clients are
    /// concerned: its body a JSON document that begins as Warren writes an envelope, with the
    /// message's `message_id` (a lower-case UUID) as its `id` and the routing key as its `route`.
    /// Any AMQP publisher can set `app_id`; a body passed through untouched that were not JSON
    /// (or not UTF-8) would break every client it reaches, and an id other than `message_id`
    /// would make the client's ack of it miss (``InboxConsumer`` keys deliveries by
    /// `message_id`), so the inbox delivery would come again and again. A message that fails is
    /// translated like any plain AMQP client's. The cost is a scan of the body, once per message
    /// on the live path, once per delivery on the inbox path.
    static func isOwnEnvelope(_ body: ByteBuffer, messageID: String?, routingKey: String) -> Bool {
        guard var id = messageID, UUIDv7Generator.isWellFormed(id) else { return false }
        var route = routingKey
        return body.withUnsafeReadableBytes { raw in
            var k = 0
            func takeBytes(_ expected: UnsafeBufferPointer<UInt8>) -> Bool {
                guard k + expected.count <= raw.count,
                      UnsafeRawBufferPointer(rebasing: raw[k..<(k + expected.count)]).elementsEqual(UnsafeRawBufferPointer(expected))
                else { return false }
                k += expected.count
                return true
            }
            func take(_ literal: StaticString) -> Bool {
                takeBytes(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
            }
            let head = take("{\"v\":1,\"id\":\"") && id.withUTF8(takeBytes) && take("\",\"route\":\"") && route.withUTF8(takeBytes)
                && take("\"")
            return head && JSONValidator.isValid(raw)
        }
    }

    /// What clients are handed for a delivery: the envelope's bytes (Warren's own passed through
    /// untouched, anything else translated and encoded once), its id, and whether it was Warren's own.
    public static func clientEnvelope(_ message: AMQPMessage, ids: UUIDv7Generator, nowMilliseconds: Int64 = WallClock.milliseconds())
        -> (bytes: ByteBuffer, id: String, own: Bool) {
        let newID = { ids.next(nowMilliseconds: UInt64(nowMilliseconds)) }
        switch incoming(body: message.body, properties: message.properties, routingKey: message.routingKey,
                        nowMilliseconds: nowMilliseconds, newID: newID) {
        case .passthrough(let bytes): return (bytes, message.properties.messageID ?? newID(), true)
        case .translated(let e): return (ByteBuffer(bytes: e.encoded()), e.id, false)
        }
    }

    /// JSON if the content type says JSON and it parses; else the UTF-8 text; else `{"base64": …}`.
    static func wrapBody(_ bytes: ByteBufferView, contentType: String?) -> JSONValue {
        if let contentType, contentType.lowercased().hasPrefix("application/json") || contentType.lowercased().hasSuffix("+json"),
           let json = try? JSONParser.parse(bytes) {
            return json
        }
        if let text = text(bytes) { return .string(text) }
        return .object([(key: "base64", value: .string(base64(bytes)))])
    }

    /// `bytes` as a string when they are valid UTF-8. Decoded from the contiguous bytes (the
    /// generic `String(validating:)` on a buffer view ran unspecialized, looking up type
    /// metadata per message) and compared with them: decoding repairs invalid UTF-8, so the
    /// result equals the input exactly when it was valid.
    static func text(_ bytes: ByteBufferView) -> String? {
        bytes.withContiguousStorageIfAvailable { raw -> String? in
            let text = String(decoding: raw, as: UTF8.self)
            var copy = text
            return copy.withUTF8 { $0.count == raw.count && $0.elementsEqual(raw) } ? text : nil
        } ?? String(validating: bytes, as: UTF8.self)
    }

    static func base64(_ bytes: some Collection<UInt8>) -> String {
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var it = bytes.makeIterator()
        while let a = it.next() {
            let b = it.next()
            let c = it.next()
            let n = UInt32(a) << 16 | UInt32(b ?? 0) << 8 | UInt32(c ?? 0)
            out.append(table[Int(n >> 18 & 63)])
            out.append(table[Int(n >> 12 & 63)])
            out.append(b == nil ? UInt8(ascii: "=") : table[Int(n >> 6 & 63)])
            out.append(c == nil ? UInt8(ascii: "=") : table[Int(n & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

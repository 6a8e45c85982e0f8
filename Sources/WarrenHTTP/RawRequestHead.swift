import NIOCore

/// The head of an HTTP/1.1 or HTTP/1.0 request as far as ``PollConnection`` needs it, read from the
/// raw bytes: method, target, and the few fields that decide whether the poll path may take
/// the request, or whether it is a WebSocket handshake (RFC 6455 §4.2.1). An HTTP/1.0 request
/// (nginx proxies with HTTP/1.0 unless told `proxy_http_version 1.1`) is answered, then its
/// connection closed; it cannot be a handshake nor expect `100 Continue`. Anything it is not
/// sure of (another HTTP version, a `Transfer-Encoding`, an `Expect` other than `100-continue`, an `Upgrade` that is not
/// a complete version-13 WebSocket handshake, a folded or malformed line, a head over the
/// limit) is `.other`, and the connection goes to hummingbird's full HTTP/1 parser, which
/// answers or refuses it.
///
/// Written by hand because the poll path is the hot one (BENCHMARKS.md: NIO's HTTP/1 parser and
/// the conversion of every request and response to swift-http-types were a third of Warren's
/// CPU per poll answer).
struct RawRequestHead: Equatable, Sendable {
    enum Method: Equatable, Sendable { case get, post, delete, other }

    var method: Method
    /// The request target as sent (path and query).
    var target: String
    var authorization: String?
    /// An `Origin` field was sent (a cross-origin browser request).
    var hasOrigin = false
    var contentLength = 0
    /// `Connection: close`, or HTTP/1.0: answer, then close.
    var close = false
    /// An HTTP/1.0 request (else HTTP/1.1).
    var http10 = false
    /// Bytes of the head, up to and including the blank line.
    var length: Int
    /// `Expect: 100-continue`: the client waits for `100 Continue` (or a final answer) before
    /// it sends the body (curl does for large bodies, older libcurl from 1 KB: without an
    /// answer it waits a second, then sends anyway).
    var expectsContinue = false
    /// A WebSocket handshake's `Sec-WebSocket-Key` (the head asks for `Upgrade: websocket`
    /// with `Connection: upgrade` and `Sec-WebSocket-Version: 13`); nil for any other request.
    var webSocketKey: String?

    enum Parse: Equatable, Sendable {
        /// The head has not fully arrived yet.
        case incomplete
        case head(RawRequestHead)
        /// Not a head this parser takes: hand the connection on.
        case other
        /// A request line longer than a whole head may be (a URL of more than 16 KB): answered
        /// `414` here, where hummingbird's parser answers a bare `400`.
        case uriTooLong
    }

    static func parse(_ bytes: ByteBufferView, maxHeadBytes: Int = 16 << 10, maxFields: Int = 100) -> Parse {
        // On the buffer's contiguous bytes: a view's slices check their bounds per byte and ran
        // unspecialized here (6 % of Warren's samples in the poll benchmark).
        if let parsed = bytes.withContiguousStorageIfAvailable({ parse($0[...], maxHeadBytes: maxHeadBytes, maxFields: maxFields) }) {
            return parsed
        }
        return Array(bytes).withUnsafeBufferPointer { parse($0[...], maxHeadBytes: maxHeadBytes, maxFields: maxFields) }
    }

    /// Bytes of the head being read, indexed from 0.
    private typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    private static func parse(_ bytes: Bytes, maxHeadBytes: Int, maxFields: Int) -> Parse {
        // Not a method's first byte (a TLS ClientHello from a client told https:// or wss://, say):
        // refused at once by the full parser, not left waiting for a blank line until the head timeout.
        if let first = bytes.first, !isTokenByte(first) { return .other }
        guard let end = headEnd(bytes, limit: maxHeadBytes) else {
            // A head with bare LF line ends never gets its CR LF CR LF: hummingbird's parser
            // reads it (or answers 400) instead of the connection waiting for the head timeout.
            if bytes.count >= maxHeadBytes, !hasLineEnd(bytes.prefix(maxHeadBytes)) { return .uriTooLong }
            return bytes.count >= maxHeadBytes || hasBareLF(bytes) ? .other : .incomplete
        }
        let head = bytes[bytes.startIndex..<(end - 2)]  // up to the last field's CRLF
        var lines = LineIterator(head)
        guard let requestLine = lines.next(), let parsed = parseRequestLine(requestLine) else { return .other }
        var result = RawRequestHead(method: parsed.method, target: parsed.target, length: end - bytes.startIndex)
        // HTTP/1.0: answered, then closed (a persistent 1.0 connection is the client's to ask
        // for and the server's to refuse; RFC 9112 §9.3).
        result.http10 = parsed.http10
        result.close = parsed.http10
        var fields = 0
        var sawLength = false
        var upgrade = (asked: false, websocket: false, connection: false, version13: false)
        while let line = lines.next() {
            fields += 1
            guard fields <= maxFields, let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else { return .other }
            let name = line[line.startIndex..<colon]
            guard name.allSatisfy(isTokenByte) else { return .other }
            let value = trim(line[(colon + 1)...])
            guard value.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else { return .other }
            switch name.count {
            case 6 where equalsLowercase(name, "origin"):
                result.hasOrigin = true
            case 6 where equalsLowercase(name, "expect"):
                // Only the one expectation HTTP/1.1 defines, once.
                guard !result.expectsContinue, equalsLowercase(value, "100-continue") else { return .other }
                result.expectsContinue = true
            case 17 where equalsLowercase(name, "transfer-encoding"):
                return .other
            case 7 where equalsLowercase(name, "upgrade"):
                guard !upgrade.asked else { return .other }
                upgrade.asked = true
                upgrade.websocket = equalsLowercase(value, "websocket")
            case 10 where equalsLowercase(name, "connection"):
                let lower = String(decoding: value, as: UTF8.self).lowercased()
                if lower.contains("upgrade") { upgrade.connection = true }
                if lower.contains("close") { result.close = true }
            case 17 where equalsLowercase(name, "sec-websocket-key"):
                guard result.webSocketKey == nil else { return .other }
                result.webSocketKey = String(decoding: value, as: UTF8.self)
            case 21 where equalsLowercase(name, "sec-websocket-version"):
                upgrade.version13 = value.elementsEqual("13".utf8)
            case 13 where equalsLowercase(name, "authorization"):
                // Two credentials: which one counts is hummingbird's to answer (it refuses the pair).
                guard result.authorization == nil else { return .other }
                result.authorization = String(decoding: value, as: UTF8.self)
            case 14 where equalsLowercase(name, "content-length"):
                // Digits only, spaces around them (NIO's parser refuses a tab there, so this does too).
                guard !sawLength, !value.isEmpty, value.count <= 18, value.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                      !line[(colon + 1)...].contains(9) else { return .other }
                sawLength = true
                result.contentLength = value.reduce(0) { $0 * 10 + Int($1 - 48) }
            default:
                break
            }
        }
        // HTTP/1.1's features are the full parser's to refuse in a 1.0 request.
        if parsed.http10, upgrade.asked || upgrade.connection || result.webSocketKey != nil || result.expectsContinue { return .other }
        // An upgrade is taken only as a whole WebSocket handshake; a key alone means nothing.
        if upgrade.asked || upgrade.connection || result.webSocketKey != nil {
            guard upgrade.asked, upgrade.websocket, upgrade.connection, upgrade.version13, result.method == .get,
                  let key = result.webSocketKey, !key.isEmpty, result.contentLength == 0 else { return .other }
        }
        return .head(result)
    }

    /// The index just past the first CR LF CR LF, if it is within `limit` bytes: from LF to LF.
    private static func headEnd(_ bytes: Bytes, limit: Int) -> Int? {
        let last = min(bytes.endIndex, bytes.startIndex + limit)
        var lf = bytes.startIndex + 3  // the earliest the LF ending CR LF CR LF can be
        while let found = ByteSearch.index(of: 10, in: bytes.base, from: lf, to: last) {
            if bytes[found - 1] == 13, bytes[found - 2] == 10, bytes[found - 3] == 13 { return found + 1 }
            lf = found + 1
        }
        return nil
    }

    /// Whether the bytes hold a line end (so the request line ended within them).
    private static func hasLineEnd(_ bytes: Bytes) -> Bool {
        bytes.contains(10)
    }

    /// Whether an LF comes without the CR before it (only looked for while a head is incomplete).
    private static func hasBareLF(_ bytes: Bytes) -> Bool {
        var previous: UInt8 = 0
        for b in bytes {
            if b == 10, previous != 13 { return true }
            previous = b
        }
        return false
    }

    private static func parseRequestLine(_ line: Bytes) -> (method: Method, target: String, http10: Bool)? {
        guard let firstSpace = line.firstIndex(of: UInt8(ascii: " ")),
              let lastSpace = line.lastIndex(of: UInt8(ascii: " ")), lastSpace > firstSpace + 1 else { return nil }
        let version = line[(lastSpace + 1)...]
        let http10 = ByteSearch.equals(version, "HTTP/1.0")
        guard http10 || ByteSearch.equals(version, "HTTP/1.1") else { return nil }
        let target = line[(firstSpace + 1)..<lastSpace]
        guard target.first == UInt8(ascii: "/"), target.allSatisfy({ $0 > 32 && $0 < 127 }) else { return nil }
        let method: Method
        switch line[line.startIndex..<firstSpace] {
        case let m where ByteSearch.equals(m, "GET"): method = .get
        case let m where ByteSearch.equals(m, "POST"): method = .post
        case let m where ByteSearch.equals(m, "DELETE"): method = .delete
        case let m where m.allSatisfy(isTokenByte): method = .other
        default: return nil
        }
        return (method, String(decoding: UnsafeBufferPointer(rebasing: target), as: UTF8.self), http10)
    }

    private static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static func equalsLowercase(_ bytes: Bytes, _ name: StaticString) -> Bool {
        let n = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        return bytes.elementsEqual(n) { a, b in (a >= 65 && a <= 90 ? a + 32 : a) == b }
    }

    private static func trim(_ s: Bytes) -> Bytes {
        var s = s
        while let f = s.first, f == 32 || f == 9 { s = s.dropFirst() }
        while let l = s.last, l == 32 || l == 9 { s = s.dropLast() }
        return s
    }

    /// Lines separated by CR LF; a bare CR or LF, or a folded line, ends the iteration with a
    /// line that fails the checks (nil fields make the head `.other`).
    private struct LineIterator {
        var rest: Bytes
        init(_ bytes: Bytes) { rest = bytes }

        mutating func next() -> Bytes? {
            guard !rest.isEmpty else { return nil }
            guard let cr = ByteSearch.index(of: 13, in: rest.base, from: rest.startIndex, to: rest.endIndex) else {
                defer { rest = rest[rest.endIndex...] }
                return rest
            }
            guard cr + 1 < rest.endIndex, rest[cr + 1] == 10 else {
                // A CR not followed by LF: the line is given with its CR, which no check passes.
                defer { rest = rest[rest.endIndex...] }
                return rest[rest.startIndex...cr]
            }
            let line = rest[rest.startIndex..<cr]
            rest = rest[(cr + 2)...]
            return line
        }
    }
}

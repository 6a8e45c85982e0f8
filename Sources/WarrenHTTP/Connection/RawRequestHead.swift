import NIOCore
import WarrenCore

/// The head of an HTTP/1.1 or HTTP/1.0 request (RFC 9112), read from the raw bytes: every
/// request Warren's HTTP edge serves is framed by this reader, whichever endpoint answers it.
///
/// It keeps the fields the edge decides on (method, target, framing, persistence, `Expect`,
/// the WebSocket handshake's fields, credentials, `Origin`) and checks the whole head as
/// RFC 9112 asks of a server: exactly one `Host` in HTTP/1.1, one `Content-Length` of digits
/// and never beside a `Transfer-Encoding`, `chunked` as the only transfer coding, no folded
/// lines, no bare CR or LF, no control bytes in a value, at most ``Limits/maxHeadBytes`` and
/// ``Limits/maxFields``. Anything else is refused with the status a server owes it
/// (``HTTPRefusal``). Empty lines before the request line are skipped (RFC 9112 §2.2) and
/// count as part of the head, toward its size and its time.
///
/// Written by hand because the poll path is the hot one (BENCHMARKS.md: NIO's HTTP/1 parser and
/// the conversion of every request and response to swift-http-types were a third of Warren's
/// CPU per poll answer); a test checks that NIO's parser frames every head this one takes the
/// same way (`RawRequestHeadAgreementTests`).
struct RawRequestHead: Equatable, Sendable {
    /// The methods Warren's endpoints are served by, and those a router answers 404 for;
    /// any other is a 501 (RFC 9110 §9.1: a method the server does not recognise).
    enum Method: String, Equatable, Sendable {
        case get = "GET", head = "HEAD", post = "POST", delete = "DELETE", options = "OPTIONS", put = "PUT", patch = "PATCH"

        var name: String { rawValue }
    }

    /// The fields of a WebSocket opening handshake (RFC 6455 §4.2.1), when the head has any.
    struct WebSocketAsk: Equatable, Sendable {
        /// `Upgrade` names `websocket`.
        var upgrade = false
        /// `Connection` names `upgrade`.
        var connection = false
        var key: String?
        var version: String?
    }

    struct Limits: Sendable {
        /// Bytes of a head, from its first byte (blank lines before the request line included)
        /// to its blank line.
        var maxHeadBytes = 16 << 10
        var maxFields = 100
    }

    var method: Method
    /// The request target in origin form (path and query); an absolute-form target's scheme
    /// and authority are dropped (RFC 9112 §3.2.2), `*` stays as it is.
    var target: String
    var authorization: String?
    /// The `Origin` field's value (a browser's cross-origin or POST request).
    var origin: String?
    /// The `Last-Event-ID` field's value (an `EventSource` reconnecting).
    var lastEventID: String?
    var contentLength = 0
    /// `Transfer-Encoding: chunked`: the body's length is in its chunks.
    var chunked = false
    /// `Connection: close`, or HTTP/1.0: answer, then close.
    var close = false
    /// An HTTP/1.0 request (else HTTP/1.1).
    var http10 = false
    /// Bytes of the head, blank lines before it included, up to and including its blank line.
    var length: Int
    /// `Expect: 100-continue` in HTTP/1.1: the client waits for `100 Continue` (or a final
    /// answer) before it sends the body (curl does for large bodies, older libcurl from 1 KB:
    /// without an answer it waits a second, then sends anyway).
    var expectsContinue = false
    /// The handshake's fields, when `Upgrade` names `websocket`.
    var webSocket: WebSocketAsk?

    /// Whether a body follows the head.
    var hasBody: Bool { chunked || contentLength > 0 }

    enum Parse: Equatable, Sendable {
        /// The head has not fully arrived yet (nothing may have, or only blank lines).
        case incomplete
        case head(RawRequestHead)
        /// Not a head Warren serves; answered with this and the connection closed.
        case refused(HTTPRefusal)
    }

    static func parse(_ bytes: ByteBufferView, limits: Limits = Limits()) -> Parse {
        // On the buffer's contiguous bytes: a view's slices check their bounds per byte and ran
        // unspecialized here (6 % of Warren's samples in the poll benchmark).
        if let parsed = bytes.withContiguousStorageIfAvailable({ parse($0[...], limits: limits) }) {
            return parsed
        }
        return Array(bytes).withUnsafeBufferPointer { parse($0[...], limits: limits) }
    }

    /// Bytes of the head being read, indexed from 0.
    typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    private static func parse(_ bytes: Bytes, limits: Limits) -> Parse {
        var start = bytes.startIndex
        while start + 1 < bytes.endIndex, bytes[start] == 13, bytes[start + 1] == 10 { start += 2 }
        let limit = bytes.startIndex + limits.maxHeadBytes
        guard start < bytes.endIndex, !(start + 1 == bytes.endIndex && bytes[start] == 13) else {
            return start >= limit ? .refused(.headTooLarge) : .incomplete
        }
        // Not a method's first byte (a TLS ClientHello from a client told https:// or wss://,
        // a bare LF, garbage): refused at once, not left waiting for a blank line.
        guard isTokenByte(bytes[start]) else { return .refused(.notHTTP) }
        guard let end = headEnd(bytes, from: start, limit: limit) else {
            if bytes.endIndex >= limit {
                return bytes[start..<limit].contains(10) ? .refused(.headTooLarge) : .refused(.uriTooLong)
            }
            // Bare LF or CR line ends never make a CR LF CR LF: refused now, not at the head timeout.
            return hasBareLineEnd(bytes[start...]) ? .refused(.badLineEnd) : .incomplete
        }
        var lines = LineIterator(bytes[start..<(end - 2)])  // up to the last field's CR LF
        guard let requestLine = lines.next() else { return .refused(.notHTTP) }
        let line: (method: Method, target: String, http10: Bool)
        switch parseRequestLine(requestLine) {
        case .success(let parsed): line = parsed
        case .failure(let refusal): return .refused(refusal)
        }
        var head = RawRequestHead(method: line.method, target: line.target, length: end - bytes.startIndex)
        head.http10 = line.http10
        head.close = line.http10
        var fields = 0
        var hosts = 0
        var sawLength = false
        var upgrades = 0
        var webSocket = WebSocketAsk()
        while let field = lines.next() {
            fields += 1
            guard fields <= limits.maxFields else { return .refused(.tooManyFields(limits.maxFields)) }
            // A line that starts with a space or a tab continues the one before (obs-fold).
            guard let first = field.first, first != 32, first != 9 else { return .refused(.folded) }
            guard let colon = ByteSearch.index(of: UInt8(ascii: ":"), in: field.base, from: field.startIndex, to: field.endIndex),
                  colon > field.startIndex else { return .refused(.badField) }
            let name = field[field.startIndex..<colon]
            guard name.allSatisfy(isTokenByte) else { return .refused(.badField) }
            let raw = field[(colon + 1)...]
            let value = trim(raw)
            guard value.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else { return .refused(.badField) }
            switch name.count {
            case 4 where equalsLowercase(name, "host"):
                hosts += 1
            case 6 where equalsLowercase(name, "origin"):
                if head.origin == nil { head.origin = string(value) }
            case 6 where equalsLowercase(name, "expect"):
                // The one expectation HTTP/1.1 defines, once (RFC 9110 §10.1.1).
                guard !head.expectsContinue, equalsLowercase(value, "100-continue") else { return .refused(.expectation) }
                head.expectsContinue = true
            case 17 where equalsLowercase(name, "transfer-encoding"):
                guard !head.chunked, equalsLowercase(value, "chunked") else { return .refused(.transferCoding) }
                head.chunked = true
            case 7 where equalsLowercase(name, "upgrade"):
                upgrades += 1
                if containsToken(value, "websocket") { webSocket.upgrade = true }
            case 10 where equalsLowercase(name, "connection"):
                if containsToken(value, "upgrade") { webSocket.connection = true }
                if containsToken(value, "close") { head.close = true }
            case 17 where equalsLowercase(name, "sec-websocket-key"):
                guard webSocket.key == nil else { return .refused(.repeated("Sec-WebSocket-Key")) }
                webSocket.key = string(value)
            case 21 where equalsLowercase(name, "sec-websocket-version"):
                webSocket.version = string(value)
            case 13 where equalsLowercase(name, "authorization"):
                // Two credentials: which one would count is not for a server to guess.
                guard head.authorization == nil else { return .refused(.repeated("Authorization")) }
                head.authorization = string(value)
            case 13 where equalsLowercase(name, "last-event-id"):
                if head.lastEventID == nil { head.lastEventID = string(value) }
            case 14 where equalsLowercase(name, "content-length"):
                // Digits only, spaces around them (NIO's parser refuses a tab there, so this does too).
                guard !sawLength else { return .refused(.repeated("Content-Length")) }
                guard !value.isEmpty, value.allSatisfy({ $0 >= 48 && $0 <= 57 }), !raw.contains(9) else {
                    return .refused(.badLength)
                }
                guard value.count <= 18 else { return .refused(.lengthTooLarge) }
                sawLength = true
                head.contentLength = value.reduce(0) { $0 * 10 + Int($1 - 48) }
            default:
                break
            }
        }
        // RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0.
        guard hosts == 1 || (line.http10 && hosts == 0) else { return .refused(.host(hosts)) }
        // A request that frames its body two ways is how requests are smuggled (RFC 9112 §6.3).
        guard !(sawLength && head.chunked) else { return .refused(.lengthAndChunked) }
        guard !(line.http10 && head.chunked) else { return .refused(.transferCoding) }
        // HTTP/1.0 has no 100 Continue to wait for (RFC 9110 §10.1.1: ignored).
        if line.http10 { head.expectsContinue = false }
        guard upgrades <= 1 else { return .refused(.repeated("Upgrade")) }
        // A handshake asks to upgrade to websocket; its other fields alone mean nothing.
        if webSocket.upgrade { head.webSocket = webSocket }
        return .head(head)
    }

    /// The index just past the first CR LF CR LF after `from`, if it is before `limit`.
    private static func headEnd(_ bytes: Bytes, from start: Int, limit: Int) -> Int? {
        let last = min(bytes.endIndex, limit)
        var lf = start + 3  // the earliest the LF ending CR LF CR LF can be
        while let found = ByteSearch.index(of: 10, in: bytes.base, from: lf, to: last) {
            if bytes[found - 1] == 13, bytes[found - 2] == 10, bytes[found - 3] == 13 { return found + 1 }
            lf = found + 1
        }
        return nil
    }

    /// Whether an LF comes without the CR before it, or a CR without the LF after it (only
    /// looked for while a head is incomplete; a CR at the very end may still get its LF).
    private static func hasBareLineEnd(_ bytes: Bytes) -> Bool {
        var previous: UInt8 = 0
        for i in bytes.indices {
            let b = bytes[i]
            if b == 10, previous != 13 { return true }
            if previous == 13, b != 10 { return true }
            previous = b
        }
        return false
    }

    private static func parseRequestLine(_ line: Bytes) -> Result<(method: Method, target: String, http10: Bool), HTTPRefusal> {
        guard let firstSpace = ByteSearch.index(of: 32, in: line.base, from: line.startIndex, to: line.endIndex),
              let lastSpace = line.lastIndex(of: 32), lastSpace > firstSpace + 1 else { return .failure(.notHTTP) }
        let version = line[(lastSpace + 1)...]
        let http10 = ByteSearch.equals(version, "HTTP/1.0")
        guard http10 || ByteSearch.equals(version, "HTTP/1.1") else { return .failure(.version) }
        let name = line[line.startIndex..<firstSpace]
        guard name.allSatisfy(isTokenByte) else { return .failure(.notHTTP) }
        let method: Method
        switch name.count {
        case 3 where ByteSearch.equals(name, "GET"): method = .get
        case 4 where ByteSearch.equals(name, "POST"): method = .post
        case 4 where ByteSearch.equals(name, "HEAD"): method = .head
        case 6 where ByteSearch.equals(name, "DELETE"): method = .delete
        case 7 where ByteSearch.equals(name, "OPTIONS"): method = .options
        case 3 where ByteSearch.equals(name, "PUT"): method = .put
        case 5 where ByteSearch.equals(name, "PATCH"): method = .patch
        default: return .failure(.method)
        }
        let target = line[(firstSpace + 1)..<lastSpace]
        guard target.allSatisfy({ $0 > 32 && $0 < 127 }) else { return .failure(.badTarget) }
        if target.first == UInt8(ascii: "/") { return .success((method, string(target), http10)) }
        if ByteSearch.equals(target, "*"), method == .options { return .success((method, "*", http10)) }
        // The absolute form (RFC 9112 §3.2.2), as a proxy sends it: its path and query.
        guard let origin = originForm(target) else { return .failure(.badTarget) }
        return .success((method, origin, http10))
    }

    /// The origin form of an absolute-form target: `http://host/path?q` → `/path?q`.
    private static func originForm(_ target: Bytes) -> String? {
        let text = string(target)
        let lower = text.lowercased()
        let scheme = lower.hasPrefix("http://") ? 7 : lower.hasPrefix("https://") ? 8 : 0
        guard scheme > 0 else { return nil }
        let rest = text.utf8.dropFirst(scheme)
        guard let authorityEnd = rest.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }) else { return "/" }
        guard authorityEnd > rest.startIndex else { return nil }
        let path = String(text[authorityEnd...])
        return path.hasPrefix("?") ? "/" + path : path
    }

    /// Whether a line is a well-formed field, `name: value` (a trailer's).
    static func isField(_ line: Bytes) -> Bool {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
              line[line.startIndex..<colon].allSatisfy(isTokenByte) else { return false }
        return line[(colon + 1)...].allSatisfy { $0 == 9 || ($0 >= 32 && $0 != 127) }
    }

    static func isTokenByte(_ b: UInt8) -> Bool {
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

    private static func string(_ bytes: Bytes) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes), as: UTF8.self)
    }

    private static func equalsLowercase(_ bytes: Bytes, _ name: StaticString) -> Bool {
        let n = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        return bytes.elementsEqual(n) { a, b in (a >= 65 && a <= 90 ? a + 32 : a) == b }
    }

    /// Whether a comma-separated list holds `token` (in any case), as `Connection` and `Upgrade` do.
    private static func containsToken(_ value: Bytes, _ token: StaticString) -> Bool {
        var start = value.startIndex
        while start <= value.endIndex {
            let end = value[start...].firstIndex(of: UInt8(ascii: ",")) ?? value.endIndex
            if equalsLowercase(trim(value[start..<end]), token) { return true }
            start = end + 1
        }
        return false
    }

    static func trim(_ s: Bytes) -> Bytes {
        var s = s
        while let f = s.first, f == 32 || f == 9 { s = s.dropFirst() }
        while let l = s.last, l == 32 || l == 9 { s = s.dropLast() }
        return s
    }

    /// Lines separated by CR LF; a bare CR or LF ends the iteration with a line that fails the
    /// checks (its control byte is not a field's).
    struct LineIterator {
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

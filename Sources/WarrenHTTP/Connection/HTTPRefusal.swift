import WarrenCore

/// A request the edge does not serve, as the answer it gets: a status, the JSON error body's
/// code and message (docs/protocol.md's shape), and a header field some statuses owe (RFC 6455's
/// `Sec-WebSocket-Version` on a 426). The connection closes after it unless
/// ``keepsConnection``: what follows a head that could not be read cannot be framed.
struct HTTPRefusal: Error, Equatable, Sendable {
    var status: Int
    var code: ErrorCode
    var message: String
    /// One more header line (`name: value`), if the status owes one.
    var header: String?
    /// The request was framed and read whole: the connection can go on to the next one.
    var keepsConnection = false

    init(_ status: Int, _ code: ErrorCode, _ message: String, header: String? = nil, keepsConnection: Bool = false) {
        self.status = status
        self.code = code
        self.message = message
        self.header = header
        self.keepsConnection = keepsConnection
    }

    // MARK: heads (RawRequestHead)

    static let notHTTP = HTTPRefusal(400, .badFrame, "not an HTTP request")
    static let version = HTTPRefusal(400, .badFrame, "only HTTP/1.1 and HTTP/1.0 are served")
    static let method = HTTPRefusal(501, .badFrame, "a method Warren does not serve")
    static let badTarget = HTTPRefusal(400, .badFrame, "the request target must be a path (or an absolute http URL)")
    static let badLineEnd = HTTPRefusal(400, .badFrame, "the request's lines must end in CR LF")
    static let folded = HTTPRefusal(400, .badFrame, "folded header lines are not accepted (RFC 9112 §5.2)")
    static let badField = HTTPRefusal(400, .badFrame, "a malformed header field")
    static let badLength = HTTPRefusal(400, .badFrame, "Content-Length must be a decimal number")
    static let lengthAndChunked = HTTPRefusal(400, .badFrame, "a request with both Content-Length and Transfer-Encoding is refused")
    static let transferCoding = HTTPRefusal(400, .badFrame, "the only transfer coding accepted is chunked, in HTTP/1.1")
    static let expectation = HTTPRefusal(417, .badFrame, "the only expectation served is 100-continue")
    static let headTooLarge = HTTPRefusal(431, .tooLarge, "the request head is over 16 KB")
    static let uriTooLong = HTTPRefusal(414, .tooLarge, "the request line is over 16 KB (a URL that long is not one Warren issues)")
    static let lengthTooLarge = HTTPRefusal(413, .tooLarge, "the request body is too large")

    static func tooManyFields(_ limit: Int) -> HTTPRefusal {
        HTTPRefusal(431, .tooLarge, "more than \(limit) header fields")
    }

    static func repeated(_ name: String) -> HTTPRefusal {
        HTTPRefusal(400, .badFrame, "more than one \(name) field")
    }

    static func host(_ count: Int) -> HTTPRefusal {
        HTTPRefusal(400, .badFrame, count == 0 ? "an HTTP/1.1 request needs a Host field" : "more than one Host field")
    }

    // MARK: bodies (HTTPConnectionStateMachine)

    static func bodyTooLarge(_ limit: Int) -> HTTPRefusal {
        HTTPRefusal(413, .tooLarge, "the request body exceeds \(limit) bytes")
    }

    static let badChunk = HTTPRefusal(400, .badFrame, "the chunked body is malformed")
    static let chunkSizeOverflow = HTTPRefusal(400, .badFrame, "a chunk size too large for any body")
    static let bodyCutShort = HTTPRefusal(400, .badFrame, "the request body ended before its length")
    static let busy = HTTPRefusal(503, .unavailable, "too many request bodies in flight on this node; retry")

    // MARK: WebSocket handshakes (WebSocketHandshake)

    static let webSocketKey = HTTPRefusal(400, .badFrame, "Sec-WebSocket-Key must be 16 bytes in base64 (RFC 6455 §4.2.1)")
    static let webSocketVersion = HTTPRefusal(426, .badFrame, "only WebSocket version 13 is served", header: "sec-websocket-version: 13")
    static let webSocketHandshake = HTTPRefusal(400, .badFrame, "a WebSocket handshake is a GET in HTTP/1.1 with Upgrade: websocket and Connection: upgrade")
}

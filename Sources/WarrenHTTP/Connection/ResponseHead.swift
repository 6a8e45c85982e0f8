import HTTPTypes
import NIOCore
import WarrenCore

/// The bytes of the edge's answers: every response is one buffer, head and body, written with
/// one write. Poll answers and the endpoints' JSON are written here field by field (no
/// swift-http-types value per answer on the hot path); the router's answers are serialized
/// from hummingbird's response.
enum ResponseHead {
    /// A head for a JSON body of `length` bytes, in a buffer with room for the body after it.
    /// `extra`: more header lines (`name: value`, separated by CR LF, without a last one).
    static func json(status: Int, length: Int, close: Bool, extra: String? = nil, reserving: Int = 0) -> ByteBuffer {
        var head = ByteBuffer()
        head.reserveCapacity(128 + (extra?.utf8.count ?? 0) + reserving)
        if status == 200 {
            // Every poll answer: the status line and type written as one constant, the length's
            // digits in place (no `String` made per answer).
            head.writeStaticString("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ")
            writeDecimal(length, to: &head)
        } else {
            statusLine(status, to: &head)
            head.writeStaticString("content-type: application/json\r\ncontent-length: ")
            writeDecimal(length, to: &head)
            if status == 429 {
                head.writeStaticString("\r\nretry-after: ")
                head.writeString(RouteSupport.retryAfterSeconds)
            }
        }
        if let extra {
            head.writeStaticString("\r\n")
            head.writeString(extra)
        }
        head.writeStaticString(close ? "\r\nconnection: close\r\n\r\n" : "\r\n\r\n")
        return head
    }

    /// A JSON answer: `status`, the body, and `extra` header lines.
    static func json(status: Int, body: ByteBuffer, close: Bool, extra: String? = nil) -> ByteBuffer {
        var response = json(status: status, length: body.readableBytes, close: close, extra: extra, reserving: body.readableBytes)
        response.writeImmutableBuffer(body)
        return response
    }

    /// A refused request's answer: its status, the JSON error body, and `connection: close`.
    static func refusal(_ refusal: HTTPRefusal) -> ByteBuffer {
        json(status: refusal.status, body: ByteBuffer(bytes: RouteSupport.errorBody(refusal.code, refusal.message)), close: true,
             extra: refusal.header)
    }

    /// A router's answer: its status and fields, `content-length` for the body (which a HEAD's
    /// answer leaves out, keeping the length the GET's would have), `date` and `server`.
    static func routed(_ response: HTTPResponse, body: ByteBuffer, close: Bool, headOnly: Bool) -> ByteBuffer {
        var out = ByteBuffer()
        out.reserveCapacity(256 + (headOnly ? 0 : body.readableBytes))
        statusLine(response.status.code, reason: response.status.reasonPhrase, to: &out)
        let bodiless = response.status.code == 204 || response.status.code == 304 || response.status.code < 200
        for field in response.headerFields {
            switch field.name {
            case .contentLength where !headOnly, .transferEncoding, .connection, .date, .server:
                continue
            default:
                out.writeString(field.name.rawName)
                out.writeStaticString(": ")
                out.writeString(field.value)
                out.writeStaticString("\r\n")
            }
        }
        if !bodiless, !headOnly {
            out.writeStaticString("content-length: ")
            writeDecimal(body.readableBytes, to: &out)
            out.writeStaticString("\r\n")
        }
        out.writeStaticString("date: ")
        out.writeString(HTTPDate.now())
        out.writeStaticString("\r\nserver: warren\r\n")
        if close { out.writeStaticString("connection: close\r\n") }
        out.writeStaticString("\r\n")
        if !bodiless, !headOnly { out.writeImmutableBuffer(body) }
        return out
    }

    private static func statusLine(_ status: Int, reason: String? = nil, to out: inout ByteBuffer) {
        out.writeStaticString("HTTP/1.1 ")
        writeDecimal(status, to: &out)
        out.writeStaticString(" ")
        let phrase = reason.flatMap { $0.isEmpty ? nil : $0 } ?? reasons[status] ?? "Status"
        out.writeString(phrase)
        out.writeStaticString("\r\n")
    }

    /// The reason phrases of the statuses the edge answers with itself (a status made from a
    /// bare code has none).
    private static let reasons: [Int: String] = Dictionary(uniqueKeysWithValues: [
        HTTPResponse.Status.ok, .created, .accepted, .noContent, .badRequest, .unauthorized, .forbidden, .notFound, .conflict,
        .contentTooLarge, .uriTooLong, .expectationFailed, .upgradeRequired, .tooManyRequests, .requestHeaderFieldsTooLarge,
        .internalServerError, .notImplemented, .serviceUnavailable,
    ].map { ($0.code, $0.reasonPhrase) })

    /// Writes a non-negative integer's decimal digits (as ``JSONWriter/int(_:)`` does, into the buffer).
    static func writeDecimal(_ value: Int, to buffer: inout ByteBuffer) {
        writeDecimal(UInt64(max(0, value)), to: &buffer)
    }

    static func writeDecimal(_ value: UInt64, to buffer: inout ByteBuffer) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: UInt64's 20 digits fit
        var n = value
        withUnsafeMutableBytes(of: &digits) { d in
            var i = d.count
            repeat {
                i -= 1
                d[i] = UInt8(truncatingIfNeeded: n % 10) + 48
                n /= 10
            } while n > 0
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: d[i...]))
        }
    }

    /// How many decimal digits ``writeDecimal(_:to:)-(UInt64,_)`` writes for `value`.
    static func decimalDigits(_ value: UInt64) -> Int {
        var n = value, count = 1
        while n >= 10 {
            n /= 10
            count += 1
        }
        return count
    }
}

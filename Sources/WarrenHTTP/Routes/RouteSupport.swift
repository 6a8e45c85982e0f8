import Foundation
import Hummingbird
import NIOCore
import WarrenCore

/// What every JSON endpoint does the same way: authenticate (the connection's own endpoints;
/// the router's have ``IdentityMiddleware``), read a bounded JSON body, and turn
/// a ``ProtocolError`` into the error body of docs/protocol.md.
struct RouteSupport: Sendable {
    let authenticator: Authenticator
    let maxBodyBytes: Int

    func authenticate(query: Query, authorization: String?) async throws(ProtocolError) -> (ClientIdentity, Date?) {
        do {
            return try await authenticator.authenticate(query: query, authorization: authorization)
        } catch {
            throw ProtocolError(error.code, error.message, ref: nil)
        }
    }

    func jsonBody(_ request: Request) async throws -> JSONValue {
        try Self.parseJSON(try await collect(request))
    }

    func collect(_ request: Request) async throws(ProtocolError) -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw tooLarge
        } catch {
            // A body cut short or malformed (a bad chunk, the connection closed mid-body).
            throw ProtocolError(.badFrame, "the request body could not be read", ref: nil)
        }
    }

    var tooLarge: ProtocolError { ProtocolError(.tooLarge, "the request body exceeds \(maxBodyBytes) bytes", ref: nil) }

    static func parseJSON(_ buffer: ByteBuffer) throws(ProtocolError) -> JSONValue {
        do { return try JSONParser.parse(buffer.readableBytesView) } catch {
            throw ProtocolError(.badFrame, "the body is not JSON: \(error)", ref: nil)
        }
    }

    /// The status and JSON error body (docs/protocol.md) for a failed request.
    static func failure(_ error: any Error) -> (status: Int, body: [UInt8]) {
        if let error = error as? ProtocolError { return (error.code.httpStatus, errorBody(error.code, error.message, ref: error.ref)) }
        return (500, errorBody(.internal, "\(error)"))
    }

    /// `{"error":{"code":…,"message":…}}`, with `"ref"` as on the WebSocket (docs/protocol.md) when the
    /// error names what failed: the subscription of `POST /v1/poll` refused, so a client can
    /// drop that one and go on with the rest.
    static func errorBody(_ code: ErrorCode, _ message: String, ref: String? = nil) -> [UInt8] {
        var w = JSONWriter()
        w.raw("{\"error\":{\"code\":")
        w.string(code.rawValue)
        w.raw(",\"message\":")
        w.string(message)
        if let ref {
            w.raw(",\"ref\":")
            w.string(ref)
        }
        w.raw("}}")
        return w.bytes
    }

    static func jsonResponse(_ status: Int, _ bytes: [UInt8]) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if status == 429 { headers[.retryAfter] = retryAfterSeconds }
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// `Retry-After` on a 429 (RFC 6585): every rate is per second, so a second from now a
    /// token is back (a connection slot or a device may take longer; the client backs off further then).
    static let retryAfterSeconds = "1"

    /// Runs a handler, turning `ProtocolError`s into the JSON error bodies of docs/protocol.md.
    static func respond(_ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch {
            let (status, body) = failure(error)
            return jsonResponse(status, body)
        }
    }
}

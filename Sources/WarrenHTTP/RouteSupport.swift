import Foundation
import Hummingbird
import NIOCore
import WarrenCore

/// What every JSON endpoint does the same way: authenticate, read a bounded JSON body, and turn
/// a ``ProtocolError`` into the error body of DESIGN §5.
struct RouteSupport: Sendable {
    let authenticator: Authenticator
    let maxBodyBytes: Int

    func authenticate(_ request: Request) async throws -> (ClientIdentity, Query, Date?) {
        let query = Query(target: request.uri.description)
        do {
            let (identity, expiresAt) = try await authenticator.authenticate(query: query, authorization: request.headers[.authorization])
            return (identity, query, expiresAt)
        } catch {
            throw ProtocolError(error.code, error.message, ref: nil)
        }
    }

    func jsonBody(_ request: Request) async throws -> JSONValue {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maxBodyBytes)
        } catch {
            throw ProtocolError(.tooLarge, "the request body exceeds \(maxBodyBytes) bytes", ref: nil)
        }
        do { return try JSONParser.parse(buffer.readableBytesView) } catch {
            throw ProtocolError(.badFrame, "the body is not JSON: \(error)", ref: nil)
        }
    }

    static func jsonResponse(_ status: Int, _ bytes: [UInt8]) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// Runs a handler, turning `ProtocolError`s into the JSON error bodies of DESIGN §5.
    static func respond(_ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as ProtocolError {
            return HTTPFrontend.errorResponse(error.code.httpStatus, error.code, error.message)
        } catch {
            return HTTPFrontend.errorResponse(500, .internal, "\(error)")
        }
    }
}

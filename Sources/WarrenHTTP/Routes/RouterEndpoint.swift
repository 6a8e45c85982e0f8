import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Hummingbird's router behind the edge: a request the connection does not answer itself
/// (health, metrics, the store, presence, the pages) is handed to the router's responder with
/// its head and its whole body (the connection read and bounded it), and the response comes
/// back whole. Hummingbird's HTTP server is not used: the connection's state machine frames
/// every request and keeps every timeout, and only the routing, middleware and handlers are
/// hummingbird's.
struct RouterEndpoint: Sendable {
    let responder: RouterResponder<WarrenRequestContext>
    let logger: Logger

    /// The response, its body collected.
    struct Answer: Sendable {
        var response: HTTPResponse
        var body: ByteBuffer
    }

    /// Runs the request through the router. A handler's error is the answer hummingbird gives
    /// it (an `HTTPError`'s status) or a 500.
    func respond(to head: RawRequestHead, fields headBytes: ByteBuffer, body: ByteBuffer, channel: any Channel) async -> Answer {
        let fields = Self.fields(headBytes)
        let request = Request(head: HTTPRequest(method: HTTPRequest.Method(head.method.name) ?? .get, scheme: nil,
                                                authority: fields[Self.host], path: head.target, headerFields: fields),
                              body: RequestBody(buffer: body))
        let context = WarrenRequestContext(source: .init(channel: channel, logger: logger))
        var response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            response = (try? error.response(from: request, context: context)) ?? Response(status: error.status)
        } catch {
            logger.debug("unrecognised error from a route", metadata: ["error": "\(error)"])
            response = Response(status: .internalServerError)
        }
        let collector = BodyCollector()
        do { try await response.body.write(collector) } catch {
            logger.debug("a route's body failed", metadata: ["error": "\(error)"])
        }
        return Answer(response: response.head, body: collector.bytes)
    }

    private static let host = HTTPField.Name("Host")!

    /// The header fields of a head the connection's parser read and checked (``RawRequestHead``).
    static func fields(_ head: ByteBuffer) -> HTTPFields {
        var fields = HTTPFields()
        head.withUnsafeReadableBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            var lines = RawRequestHead.LineIterator(bytes[...])
            // Blank lines before the request line, then the request line.
            while let line = lines.next(), line.isEmpty {}
            while let line = lines.next(), !line.isEmpty {
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
                let name = String(decoding: UnsafeBufferPointer(rebasing: line[line.startIndex..<colon]), as: UTF8.self)
                let value = String(decoding: UnsafeBufferPointer(rebasing: RawRequestHead.trim(line[(colon + 1)...])), as: UTF8.self)
                if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
            }
        }
        return fields
    }
}

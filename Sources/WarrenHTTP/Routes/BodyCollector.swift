import HTTPTypes
import Hummingbird
import NIOCore

/// Collects a router response's body into one buffer (``RouterEndpoint``): the edge writes
/// every answer whole, with its length, and the router's answers are small pages and JSON.
final class BodyCollector: ResponseBodyWriter {
    private(set) var bytes = ByteBuffer()

    func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        bytes.writeBuffer(&buffer)
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

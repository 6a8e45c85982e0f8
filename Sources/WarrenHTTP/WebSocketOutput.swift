import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import WarrenCore
import WSCore

/// A session's outbound side on a WebSocket: a bounded byte budget in front of
/// the socket's writer. Frames past the budget are refused (the session then
/// closes the socket with 4008), so a client that stops reading costs at most
/// `limit` bytes.
final class WebSocketOutput: SessionOutput {
    private let continuation: AsyncStream<ByteBuffer>.Continuation
    private let stream: AsyncStream<ByteBuffer>
    private let limit: Int
    private let state = NIOLockedValueBox<(queued: Int, close: (UInt16, String)?)>((0, nil))

    init(limit: Int) {
        self.limit = limit
        (stream, continuation) = AsyncStream<ByteBuffer>.makeStream()
    }

    func send(_ frame: ByteBuffer) -> Bool {
        let accepted = state.withLockedValue { s -> Bool in
            guard s.close == nil, s.queued + frame.readableBytes <= limit else { return false }
            s.queued += frame.readableBytes
            return true
        }
        if accepted { continuation.yield(frame) }
        return accepted
    }

    func close(code: UInt16, reason: String) {
        let first = state.withLockedValue { s -> Bool in
            guard s.close == nil else { return false }
            s.close = (code, reason)
            return true
        }
        if first { continuation.finish() }
    }

    /// Writes queued frames until closed; then sends the close frame with the requested code.
    func run(_ outbound: WebSocketOutboundWriter) async {
        for await frame in stream {
            do {
                try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: frame)))
            } catch {
                break
            }
            state.withLockedValue { $0.queued -= frame.readableBytes }
        }
        if let (code, reason) = state.withLockedValue({ $0.close }) {
            try? await outbound.close(code == 1000 ? .normalClosure : .unknown(code), reason: reason)
        }
    }

    /// Ends the writer without a close frame (the socket is already going).
    func finish() { continuation.finish() }
}

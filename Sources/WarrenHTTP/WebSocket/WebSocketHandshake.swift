import Crypto
import Foundation
import NIOCore

/// The server's side of the WebSocket opening handshake (RFC 6455 §4.2): the checks a
/// handshake must pass, and the `101` answer. No subprotocol and no extension is negotiated
/// (docs/protocol.md: JSON text frames, uncompressed).
enum WebSocketHandshake {
    /// Why a head with WebSocket handshake fields (``RawRequestHead/webSocket``) is not a
    /// handshake Warren takes, or nil when it is: a GET in HTTP/1.1 without a body, with
    /// `Upgrade: websocket` and `Connection: upgrade` (400), version 13 (else 426, naming 13),
    /// and a key of 16 bytes in base64 (400).
    static func check(_ head: RawRequestHead, _ ask: RawRequestHead.WebSocketAsk) -> HTTPRefusal? {
        guard head.method == .get, !head.http10, !head.hasBody, ask.upgrade, ask.connection else { return .webSocketHandshake }
        guard ask.version == "13" else { return .webSocketVersion }
        guard let key = ask.key, key.utf8.count == 24, let decoded = Data(base64Encoded: key), decoded.count == 16 else {
            return .webSocketKey
        }
        return nil
    }

    /// The GUID RFC 6455 appends to the client's key.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`.
    static func accept(key: String) -> String {
        Data(Insecure.SHA1.hash(data: Data((key + guid).utf8))).base64EncodedString()
    }

    /// The whole `101 Switching Protocols` answer.
    static func switchingProtocols(key: String) -> ByteBuffer {
        var head = ByteBuffer()
        head.reserveCapacity(160)
        head.writeStaticString("HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-accept: ")
        head.writeString(accept(key: key))
        head.writeStaticString("\r\n\r\n")
        return head
    }
}

import Crypto
import Foundation
import NIOCore

/// The server's side of the WebSocket opening handshake (RFC 6455 §4.2.2): the `101`
/// answer to a handshake ``RawRequestHead`` recognised. No subprotocol and no extension is
/// negotiated (DESIGN §4: JSON text frames, uncompressed).
enum WebSocketHandshake {
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

import NIOCore
import Testing
@testable import WarrenHTTP

@Suite("The WebSocket handshake and frame checks")
struct WebSocketHandshakeTests {
    /// RFC 6455 §1.3's own example.
    @Test func acceptIsTheRFCsExample() {
        #expect(WebSocketHandshake.accept(key: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let answer = String(buffer: WebSocketHandshake.switchingProtocols(key: "dGhlIHNhbXBsZSBub25jZQ=="))
        #expect(answer.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(answer.contains("\r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        #expect(answer.hasSuffix("\r\n\r\n"))
    }

    @Test func textMustBeUTF8() {
        #expect(WebSocketConnectionHandler.isUTF8(ByteBuffer(string: #"{"op":"ping"}"#)))
        #expect(WebSocketConnectionHandler.isUTF8(ByteBuffer(string: #"{"body":"héllo 🐇"}"#)))
        #expect(WebSocketConnectionHandler.isUTF8(ByteBuffer()))
        #expect(!WebSocketConnectionHandler.isUTF8(ByteBuffer(bytes: [0x7B, 0xC3, 0x28, 0x7D])))
        #expect(!WebSocketConnectionHandler.isUTF8(ByteBuffer(bytes: [0xED, 0xA0, 0x80])))  // a lone surrogate
        #expect(!WebSocketConnectionHandler.isUTF8(ByteBuffer(bytes: [0xE2, 0x82])))  // cut short
    }
}

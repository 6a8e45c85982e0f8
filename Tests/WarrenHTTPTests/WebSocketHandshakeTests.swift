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

    /// A client's close is echoed only when the RFC allows its body: no body, or a code an
    /// endpoint may send with a UTF-8 reason.
    @Test func closeFramesAreCheckedBeforeTheyAreEchoed() {
        func body(_ bytes: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: bytes) }
        func code(_ c: UInt16, _ reason: [UInt8] = []) -> ByteBuffer {
            var b = ByteBuffer()
            b.writeInteger(c)
            b.writeBytes(reason)
            return b
        }
        typealias H = WebSocketConnectionHandler
        #expect(H.checkClose(ByteBuffer()) == .valid(nil))
        for valid: UInt16 in [1000, 1001, 1003, 1007, 1011, 1014, 3000, 4008, 4999] {
            #expect(H.checkClose(code(valid, Array("bye".utf8))) == .valid(valid))
        }
        for invalid: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 1100, 2999, 5000, 65535] {
            guard case .invalid(1002, _) = H.checkClose(code(invalid)) else {
                Issue.record("close code \(invalid) was taken")
                continue
            }
        }
        if case .invalid(1002, _) = H.checkClose(body([0x03])) {} else { Issue.record("a one-byte body was taken") }
        if case .invalid(1007, _) = H.checkClose(code(1000, [0xC3, 0x28])) {} else { Issue.record("a reason that is not UTF-8 was taken") }
        #expect(H.checkClose(code(1000, Array("ça va".utf8))) == .valid(1000))
    }
}

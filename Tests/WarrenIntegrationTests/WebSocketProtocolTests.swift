import NIOCore
import Testing

/// RFC 6455 as Warren's WebSocket server speaks it, seen by a hand-written client: what a
/// library client would never send is answered with the close code the RFC names.
@Suite("WebSocket protocol", .serialized)
struct WebSocketProtocolTests {
    static func pong(_ text: String) -> Bool { text.contains(#""op":"pong""#) }

    @Test func framesAreReadAsTheRFCSays() async throws {
        let warren = try await WarrenInstance.start(["WARREN_LIMITS_MAX_FRAME_BYTES": "4096"])
        defer { Task { await warren.stop() } }
        func connect(_ name: String, then: ByteBuffer = ByteBuffer()) async throws -> RawWebSocket {
            try await RawWebSocket.connect(port: warren.port, query: "user=\(uniqueUser(name))", then: then)
        }

        // A frame sent in the same packet as the handshake is read after it.
        let eager = try await connect("eager", then: RawWebSocket.frame(opcode: 0x1, Array(#"{"op":"ping"}"#.utf8)))
        #expect(try await eager.read(until: Self.pong).texts.contains(where: Self.pong))

        // A message in fragments (with a ping between them) is one message.
        let pieces = try await connect("pieces")
        try await pieces.sendFrame(opcode: 0x1, Array(#"{"op":"#.utf8), fin: false)
        try await pieces.sendFrame(opcode: 0x9, Array("hello".utf8))
        try await pieces.sendFrame(opcode: 0x0, Array(#""ping"}"#.utf8))
        #expect(try await pieces.read(until: Self.pong).texts.contains(where: Self.pong))

        // The client's close is answered with its code, and the connection closes.
        try await pieces.sendFrame(opcode: 0x8, [0x03, 0xE8])
        #expect(try await pieces.readUntilClose() == 1000)

        // A close the RFC does not allow is answered 1002 (a code no endpoint may send, a
        // one-byte body) or 1007 (a reason that is not UTF-8), not echoed.
        for (body, expected): ([UInt8], UInt16) in [([0x03, 0xE7], 1002), ([0x03], 1002), ([0x03, 0xE8, 0xC3, 0x28], 1007)] {
            let closing = try await connect("closing")
            try await closing.sendFrame(opcode: 0x8, body)
            #expect(try await closing.readUntilClose() == expected)
        }

        // Text that is not UTF-8: 1007.
        let garbled = try await connect("garbled")
        try await garbled.sendFrame(opcode: 0x1, [0x7B, 0xC3, 0x28, 0x7D])
        #expect(try await garbled.readUntilClose() == 1007)

        // A client frame without a mask: 1002.
        let bare = try await connect("bare")
        try await bare.sendFrame(opcode: 0x1, Array(#"{"op":"ping"}"#.utf8), masked: false)
        #expect(try await bare.readUntilClose() == 1002)

        // Fragments adding up to more than max_frame_bytes: 1009, counted as frame_size; so is
        // a single frame over it.
        let long = try await connect("long")
        try await long.sendFrame(opcode: 0x1, Array(repeating: 0x20, count: 3000), fin: false)
        try await long.sendFrame(opcode: 0x0, Array(repeating: 0x20, count: 3000))
        #expect(try await long.readUntilClose() == 1009)
        let big = try await connect("big")
        try await big.sendFrame(opcode: 0x1, Array(repeating: 0x20, count: 5000))
        #expect(try await big.readUntilClose() == 1009)
        #expect(try await GreedyClientTests.limitHits(warren, "ws", "frame_size") == 2)

        // Through all of it the node went on serving: a new socket is answered.
        let after = try await connect("after")
        try await after.sendText(#"{"op":"ping"}"#)
        #expect(try await after.read(until: Self.pong).texts.contains(where: Self.pong))
    }

    /// A socket that answers nothing is closed after two ping periods (1001); one whose client
    /// answers pings stays.
    @Test func aSilentClientIsClosedByThePings() async throws {
        let warren = try await WarrenInstance.start(["WARREN_WEBSOCKET_PING_INTERVAL": "1", "WARREN_WEBSOCKET_IDLE_TIMEOUT": "2"])
        defer { Task { await warren.stop() } }
        let lively = try await warren.socket(uniqueUser("lively"))
        let silent = try await RawWebSocket.connect(port: warren.port, query: "user=\(uniqueUser("silent"))")
        let started = ContinuousClock.now
        #expect(try await silent.readUntilClose() == 1001)
        #expect(ContinuousClock.now - started >= .seconds(1), "closed before a ping could go unanswered")
        _ = try await lively.request(#"{"op":"ping"}"#, expect: "pong")
    }
}

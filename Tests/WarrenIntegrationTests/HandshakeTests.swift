import Testing

/// A refused WebSocket upgrade is answered with docs/protocol.md's status and JSON reason, seen by a
/// raw HTTP client (a native client tells "refresh the token" from "give up" by it).
@Suite("WebSocket handshake refusals", .serialized)
struct HandshakeTests {
    static let upgrade = [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                          ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]

    func expectRefusal(_ warren: WarrenInstance, _ target: String, _ status: Int, _ code: String,
                       sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let r = try await HTTPTestClient.request(.GET, port: warren.port, target, headers: Self.upgrade)
        #expect(r.status == status, "\(target): \(r.status) \(r.body)", sourceLocation: sourceLocation)
        #expect(r.json?["error"]?["code"]?.stringValue == code, "\(target): \(r.body)", sourceLocation: sourceLocation)
        #expect(r.header("connection")?.lowercased() == "close", sourceLocation: sourceLocation)
    }

    @Test func eachRefusalHasItsStatusAndReason() async throws {
        let warren = try await WarrenInstance.start(["WARREN_LIMITS_MAX_CONNECTIONS_PER_USER": "1"])
        defer { Task { await warren.stop() } }
        try await expectRefusal(warren, "/v1/ws", 401, "unauthorized")
        try await expectRefusal(warren, "/v1/ws?user=not.a.word", 400, "bad_frame")
        try await expectRefusal(warren, "/v1/ws?user=\(uniqueUser("d"))&device=a%20b", 400, "bad_frame")
        try await expectRefusal(warren, "/v1/elsewhere?user=\(uniqueUser("p"))", 404, "not_found")
        let user = uniqueUser("one")
        let first = try await warren.socket(user)
        try await expectRefusal(warren, "/v1/ws?user=\(user)", 429, "rate_limited")
        // The node goes on serving: the admitted socket still answers.
        _ = try await first.request(#"{"op":"ping"}"#, expect: "pong")
    }

    @Test func aBadTokenIs401() async throws {
        let warren = try await WarrenInstance.start(["WARREN_AUTH_MODE": "token", "WARREN_AUTH_SECRET": "test-secret-test-secret-test-secret"])
        defer { Task { await warren.stop() } }
        try await expectRefusal(warren, "/v1/ws?token=not-a-jwt", 401, "unauthorized")
        try await expectRefusal(warren, "/v1/ws", 401, "unauthorized")
    }
}

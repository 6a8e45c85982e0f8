import Foundation
import NIOSSL
import Testing
import WarrenCore

/// `wss://` straight to Warren (`[http] tls_cert_file`/`tls_key_file`): frames written for a
/// fan-out go out below the WebSocket encoder and must still pass through TLS.
@Suite("WebSocket over TLS", .serialized)
struct SecureWebSocketTests {
    /// The test CA and server certificate scripts/rabbitmq.sh made (for 127.0.0.1 and localhost).
    static let tlsDirectory = (ProcessInfo.processInfo.environment["WARREN_RABBITMQ_DIR"] ?? "/tmp/warren-rabbitmq") + "/tls"

    @Test func publishAndLiveDeliveryOverWSS() async throws {
        let warren = try await WarrenInstance.start([
            "WARREN_HTTP_TLS_CERT_FILE": Self.tlsDirectory + "/server.pem",
            "WARREN_HTTP_TLS_KEY_FILE": Self.tlsDirectory + "/server.key",
        ])
        defer { Task { await warren.stop() } }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(Self.tlsDirectory + "/ca.pem")
        let alice = uniqueUser("alice"), bob = uniqueUser("bob")
        let a = try await TestSocket.connect(port: warren.port, query: "user=\(alice)", tls: tls)
        let b = try await TestSocket.connect(port: warren.port, query: "user=\(bob)", tls: tls)
        try await a.subscribe("s1", "#.\(alice).#")
        try await b.subscribe("s1", "#.\(bob).#")

        for n in 1...3 {
            _ = try await a.request(#"{"op":"pub","route":"\#(alice).\#(bob)","body":"over tls \#(n)"}"#, expect: "puback")
        }
        for socket in [a, b] {
            for n in 1...3 {
                let env = try #require(try await socket.next(op: "msg").env)
                #expect(env["body"] == .string("over tls \(n)") && env["from"]?.stringValue == alice)
            }
        }
        #expect(await a.close() == 1000)
        _ = await b.close()
    }
}

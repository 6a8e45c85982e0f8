import Foundation
import TestSupport
import Testing
import WarrenCore

@Suite("Warren serving HTTPS", .serialized)
struct WarrenHTTPSTests {
    /// curl with the test CA: the certificate scripts/rabbitmq.sh made for localhost.
    static func curl(_ url: String, ca: String) throws -> (status: Int32, output: String) {
        try TestEnvironment.run(URL(fileURLWithPath: "/usr/bin/env"), ["curl", "-sS", "--max-time", "10", "--cacert", ca, url])
    }

    @Test func warrenServesHTTPSWithItsCertificate() async throws {
        let tls = (ProcessInfo.processInfo.environment["WARREN_RABBITMQ_DIR"] ?? "/tmp/warren-rabbitmq") + "/tls"
        let warren = try await WarrenInstance.start(["WARREN_HTTP_TLS_CERT_FILE": tls + "/server.pem",
                                                     "WARREN_HTTP_TLS_KEY_FILE": tls + "/server.key"])
        defer { Task { await warren.stop() } }
        let ok = try Self.curl("https://localhost:\(warren.port)/readyz", ca: tls + "/ca.pem")
        #expect(ok.status == 0 && ok.output == "ready\n", "\(ok)")
        // Plain HTTP to the TLS port gets nothing useful; an untrusting client refuses the certificate.
        #expect((try? await HTTPTestClient.request(.GET, port: warren.port, "/readyz"))?.status != 200)
        let untrusted = try Self.curl("https://localhost:\(warren.port)/readyz", ca: "/etc/ssl/certs/ca-certificates.crt")
        #expect(untrusted.status != 0)
        #expect((try? await HTTPTestClient.request(.GET, port: warren.port, "/readyz"))?.status != 200)
    }
}

import Foundation
import Testing
import WarrenCore

@Suite("Readiness", .serialized)
struct ReadinessTests {
    /// /readyz follows the broker link: 503 while the broker cannot be reached, 200 within
    /// seconds once it can. The outage is made by a proxy in front of the shared test broker
    /// (stopping the real node would disturb the other suites' broker); stopping the real node
    /// with scripts/rabbitmq.sh stop behaves the same (checked by hand, see the README).
    @Test func readinessFollowsTheBrokerLink() async throws {
        let proxy = try await OutageProxy.start(to: 5672)
        let warren = try await WarrenInstance.start([
            "WARREN_AMQP_URL": "amqp://guest:guest@127.0.0.1:\(proxy.port)/%2f",
            "WARREN_AMQP_RECONNECT_MAX_MS": "500",
        ])
        defer { Task { await warren.stop(); await proxy.stop() } }
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status == 200)

        proxy.setDown(true)
        #expect(await warren.process.waitForLog("broker link lost", timeout: .seconds(30)))
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status == 503)
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/healthz").status == 200, "alive all along")
        // A WebSocket upgrade meanwhile is refused with 503 and the reason (docs/protocol.md).
        let refused = try await HTTPTestClient.request(.GET, port: warren.port, "/v1/ws?user=\(uniqueUser("u"))",
                                                       headers: HandshakeTests.upgrade)
        #expect(refused.status == 503 && refused.json?["error"]?["code"]?.stringValue == "unavailable", "\(refused.status) \(refused.body)")

        let back = ContinuousClock.now
        proxy.setDown(false)
        #expect(await warren.process.waitForLog("broker link up", timeout: .seconds(30)))
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status == 200)
        print("ready again \(ContinuousClock.now - back) after the broker was reachable")
    }
}

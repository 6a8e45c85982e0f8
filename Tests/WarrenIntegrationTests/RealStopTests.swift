import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import WarrenCore

@Suite("Readiness with the real broker stopped", .serialized)
struct RealStopTests {
    /// /readyz is 503 while RabbitMQ is stopped and 200 within seconds after it is back.
    @Test func readinessWhileTheBrokerIsStopped() async throws {
        let warren = try await WarrenInstance.start(["WARREN_AMQP_RECONNECT_MAX_MS": "500"])
        defer { Task { await warren.stop() } }
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status == 200)
        try brokerScript("stop")
        #expect(await warren.process.waitForLog("broker link lost", timeout: .seconds(30)))
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status == 503)
        try brokerScript("start")
        let back = ContinuousClock.now
        #expect(await warren.process.waitForLog("broker link up", timeout: .seconds(60)))
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status == 200)
        print("ready again \(ContinuousClock.now - back) after the broker answered again")
    }
}

/// Runs scripts/rabbitmq.sh ARG and waits for it. Uses system(3): Foundation's Process on
/// Linux was seen never to report the exit of `rabbitmq.sh start` (whose broker lives on
/// in the background), hanging waitUntilExit.
func brokerScript(_ argument: String) throws {
    let script = WarrenProcess.packageRoot.appendingPathComponent("scripts/rabbitmq.sh").path
    let status = system("'\(script)' \(argument) </dev/null >/dev/null 2>&1")
    guard status == 0 else { throw SocketError(description: "rabbitmq.sh \(argument) exited with \(status)") }
}

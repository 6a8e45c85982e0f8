import Foundation
import WarrenBenchKit
#if canImport(Glibc)
import Glibc
#endif

/// A Warren node the bench starts for one target run and stops after it, so each run's
/// memory starts from a fresh process.
final class WarrenProcess: MeasuredServer {
    let process = Process()
    let port: Int

    /// Starts `binary serve --config config` on `port` with the limits a load test needs
    /// lifted (per-user connection cap, publish rate) and waits for `/readyz`.
    init(binary: String, config: String, port: Int, amqpURL: String, exchange: String, log: String,
         environment overrides: [String: String] = [:]) throws {
        self.port = port
        guard LoopbackHTTP.status(port: port, path: "/readyz") == nil else {
            throw BenchError.warren("something already listens on 127.0.0.1:\(port) (a Warren left from an earlier run?)")
        }
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--config", config]
        var env = ProcessInfo.processInfo.environment
        env["WARREN_HTTP_LISTEN"] = "127.0.0.1:\(port)"
        env["WARREN_AMQP_URL"] = amqpURL
        env["WARREN_AMQP_EXCHANGE"] = exchange
        env["WARREN_AUTH_MODE"] = "none"
        env["WARREN_HTTP_DEMO"] = "false"
        env["WARREN_LOG_LEVEL"] = "warning"
        env["WARREN_LIMITS_MAX_CONNECTIONS_PER_USER"] = "0"
        env["WARREN_LIMITS_PUBLISH_RATE"] = "0"
        env["WARREN_LIMITS_QUERY_RATE"] = "0"
        env.merge(overrides) { $1 }
        process.environment = env
        try launch(log: log, readyPath: "/readyz", within: 60)
    }

    var probe: ProcessProbe { ProcessProbe(pid: process.processIdentifier) }

    /// SIGTERM (Warren drains and exits), then waits for the exit.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}

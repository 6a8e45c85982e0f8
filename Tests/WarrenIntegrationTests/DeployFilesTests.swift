import Foundation
import Testing

/// deploy/ is what users copy: checked against the Warren it ships with, as far as these
/// machines allow (no Docker engine, Kubernetes or systemd as PID 1). deploy/README.md says
/// what else was tried by hand.
@Suite("deploy/", .serialized)
struct DeployFilesTests {
    static func text(_ path: String) throws -> String {
        try String(contentsOf: WarrenProcess.packageRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// The Kubernetes ConfigMap's `bridge.toml` (the indented block under `bridge.toml: |`) is
    /// a configuration Warren accepts, with the Secret's variables set.
    @Test func theKubernetesConfigurationIsValid() async throws {
        let manifest = try Self.text("deploy/kubernetes/warren.yaml")
        let lines = manifest.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex { $0.trimmingCharacters(in: .whitespaces) == "bridge.toml: |" })
        let block = lines[(start + 1)...].prefix { $0.hasPrefix("    ") || $0.isEmpty }.map { String($0.dropFirst(4)) }
        #expect(block.contains("[amqp]"), "\(block)")
        // One Service name in front of a cluster: the replicated queue types are set outright.
        let toml = block.joined(separator: "\n")
        #expect(toml.contains("[inbox]\nqueue_type = \"quorum\"") && toml.contains("[store]\nqueue_type = \"quorum\""), "\(toml)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("warren-k8s-\(UUID().uuidString).toml")
        try block.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let check = try WarrenProcess(["check", "--config", file.path],
                                      environment: ["WARREN_AUTH_SECRET": String(repeating: "k", count: 40),
                                                    "WARREN_STORE_URL": "postgres://warren:x@127.0.0.1:5432/warren"])
        #expect(await check.waitForExit() == 0, "\(check.log)")
    }

    /// Every deployment of several nodes shares one PostgreSQL store (each node consumes
    /// warren.store as a competing consumer: an SQLite file per node would keep part of the
    /// history), and a single node's SQLite file lands in a writable working directory.
    @Test func everyDeploymentHasAStoreItCanWrite() throws {
        #expect(try Self.text("deploy/docker/compose.yaml").contains(#"WARREN_STORE_URL: "postgres://"#))
        #expect(try Self.text("deploy/kubernetes/warren.yaml").contains(#"WARREN_STORE_URL: "postgres://"#))
        let unit = try Self.text("deploy/systemd/warren.service")
        #expect(unit.contains("StateDirectory=warren\n") && unit.contains("WorkingDirectory=/var/lib/warren\n"), "\(unit)")
        let image = try Self.text("deploy/docker/Dockerfile")
        #expect(image.contains("WORKDIR /var/lib/warren\n") && image.contains("chown 10001:10001 /var/lib/warren"), "\(image)")
    }

    /// Every metric the alert rules name is one Warren exports (a renamed metric would leave
    /// its alert silent for ever).
    @Test func theAlertRulesNameMetricsWarrenExports() async throws {
        let rules = try Self.text("deploy/prometheus/warren-alerts.yml")
        let named = Set(rules.matches(of: /warren_[a-z_]+/).map { String($0.output) }
            .map { $0.replacing(/_(bucket|count|sum)$/, with: "") })
        #expect(named.count >= 3, "\(named)")
        // With the store on (its metrics are there only then), on a queue of its own.
        let database = try await StoreTests.makeDatabase(.sqlite)
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let warren = try await WarrenInstance.start(["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": database.url,
                                                     "WARREN_STORE_QUEUE": queue])
        let metrics = try await HTTPTestClient.request(.GET, port: warren.port, "/metrics").body
        await warren.stop()
        await database.remove()
        try? await StoreTests.deleteQueue(queue)
        let exported = Set(metrics.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }
            .map { String($0.split(separator: " ")[2]) })
        #expect(named.subtracting(exported).isEmpty, "not exported: \(named.subtracting(exported))")
    }
}

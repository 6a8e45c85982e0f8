import AMQPClient
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOHTTP1
import Testing
import WarrenCore

/// The Warren nodes of the soak test, each reached through an outage proxy (so a fault can
/// cut every client socket of a node mid-frame), replaceable after a SIGKILL.
actor SoakCluster {
    private(set) var nodes: [WarrenInstance]
    private(set) var proxies: [OutageProxy]
    let exchange: String
    let environment: [String: String]
    /// Node `i`'s own additions to `environment` (its broker list, say).
    let perNode: [[String: String]]

    init(nodes: [WarrenInstance], proxies: [OutageProxy], exchange: String, environment: [String: String],
         perNode: [[String: String]]) {
        self.nodes = nodes
        self.proxies = proxies
        self.exchange = exchange
        self.environment = environment
        self.perNode = perNode
    }

    static func start(count: Int, environment: [String: String], perNode: [[String: String]] = []) async throws -> SoakCluster {
        let exchange = "soak.chat.\(UUID().uuidString.prefix(8).lowercased())"
        var nodes: [WarrenInstance] = []
        var proxies: [OutageProxy] = []
        for i in 0..<count {
            let node = try await WarrenInstance.start(environment.merging(i < perNode.count ? perNode[i] : [:]) { $1 }, exchange: exchange)
            nodes.append(node)
            proxies.append(try await OutageProxy.start(to: node.port))
        }
        return SoakCluster(nodes: nodes, proxies: proxies, exchange: exchange, environment: environment, perNode: perNode)
    }

    /// The proxy port of node `i` (wrapping), for a client to connect through.
    func port(_ i: Int) -> Int { proxies[i % proxies.count].port }
    func directPort(_ i: Int) -> Int { nodes[i % nodes.count].port }

    /// SIGKILLs node `i` and starts a replacement (new port, new node id, same exchange).
    func killAndReplace(_ i: Int) async throws {
        soakProgress("SIGKILL pid \(nodes[i].process.process.processIdentifier)")
        nodes[i].process.process.signal(SIGKILL)
        _ = await nodes[i].process.waitForExit()
        proxies[i].setDown(true)
        await proxies[i].stop()
        let node = try await WarrenInstance.start(environment.merging(i < perNode.count ? perNode[i] : [:]) { $1 }, exchange: exchange)
        soakProgress("replacement pid \(node.process.process.processIdentifier) on port \(node.port)")
        nodes[i] = node
        proxies[i] = try await OutageProxy.start(to: node.port)
    }

    /// Cuts every client connection of node `i` at whatever byte it was at.
    func dropSockets(_ i: Int) {
        proxies[i].setDown(true)
        proxies[i].setDown(false)
    }

    func allReady() async -> Bool {
        for node in nodes {
            guard (try? await HTTPTestClient.request(.GET, port: node.port, "/readyz"))?.status == 200 else { return false }
        }
        return true
    }

    func stopAll() async {
        for node in nodes { await node.stop() }
        for proxy in proxies { await proxy.stop() }
    }
}

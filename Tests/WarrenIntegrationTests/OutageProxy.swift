import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TestSupport

/// A loopback TCP proxy to the broker that can play an outage: when down, it drops every
/// open connection and refuses (closes at once) new ones.
final class OutageProxy: Sendable {
    let port: Int
    private let server: any Channel
    private let state: NIOLockedValueBox<(down: Bool, open: [ObjectIdentifier: any Channel])>

    private init(port: Int, server: any Channel, state: NIOLockedValueBox<(down: Bool, open: [ObjectIdentifier: any Channel])>) {
        self.port = port
        self.server = server
        self.state = state
    }

    static func start(to target: Int) async throws -> OutageProxy {
        let state = NIOLockedValueBox<(down: Bool, open: [ObjectIdentifier: any Channel])>((false, [:]))
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                if state.withLockedValue({ $0.down }) { return inbound.close() }
                return ClientBootstrap(group: inbound.eventLoop).connect(host: "127.0.0.1", port: target).flatMap { outbound in
                    state.withLockedValue {
                        $0.open[ObjectIdentifier(inbound)] = inbound
                        $0.open[ObjectIdentifier(outbound)] = outbound
                    }
                    let (a, b) = SpliceHandler.pair(isFrozen: { false })
                    return inbound.pipeline.addHandler(a).and(outbound.pipeline.addHandler(b)).map { _ in }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return OutageProxy(port: server.localAddress!.port!, server: server, state: state)
    }

    func setDown(_ down: Bool) {
        let toClose = state.withLockedValue { s -> [any Channel] in
            s.down = down
            guard down else { return [] }
            defer { s.open.removeAll() }
            return Array(s.open.values)
        }
        for c in toClose { c.close(promise: nil) }
    }

    func stop() async { try? await server.close() }
}

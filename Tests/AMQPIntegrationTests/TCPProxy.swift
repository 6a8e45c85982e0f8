import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TestSupport

/// A loopback TCP proxy in front of the broker that can be told to stop forwarding
/// (keeping the sockets open), to play a peer that has silently died.
final class TCPProxy: Sendable {
    let port: Int
    private let server: any Channel
    private let state: NIOLockedValueBox<(frozenUpTo: Int, connections: Int)>

    private init(port: Int, server: any Channel, state: NIOLockedValueBox<(frozenUpTo: Int, connections: Int)>) {
        self.port = port
        self.server = server
        self.state = state
    }

    /// Connections accepted so far.
    var connections: Int { state.withLockedValue { $0.connections } }

    /// From now on, bytes on connections open at this moment are dropped in both directions.
    /// Connections accepted later forward normally.
    func freezeExisting() -> Int {
        state.withLockedValue { s in
            s.frozenUpTo = s.connections
            return s.connections
        }
    }

    static func start(to targetPort: Int) async throws -> TCPProxy {
        let state = NIOLockedValueBox<(frozenUpTo: Int, connections: Int)>((0, 0))
        let group = MultiThreadedEventLoopGroup.singleton
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                let generation = state.withLockedValue { s -> Int in
                    s.connections += 1
                    return s.connections
                }
                let isFrozen: @Sendable () -> Bool = { state.withLockedValue { generation <= $0.frozenUpTo } }
                return ClientBootstrap(group: inbound.eventLoop)
                    .connect(host: "127.0.0.1", port: targetPort)
                    .flatMap { outbound in
                        let (a, b) = SpliceHandler.pair(isFrozen: isFrozen)
                        return inbound.pipeline.addHandler(a).and(outbound.pipeline.addHandler(b)).map { _ in }
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TCPProxy(port: server.localAddress!.port!, server: server, state: state)
    }

    func stop() async {
        try? await server.close()
    }
}

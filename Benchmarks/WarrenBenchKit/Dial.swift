import NIOCore
import NIOPosix

/// Opens a loopback TCP connection on the recorder's event loop, lets `configure` build its
/// pipeline, and completes with the channel once the client reports itself ready through
/// the promise (its subscription is in effect); a failed connect or an early close fails it.
func dial(
    port: Int, recorder: Recorder, name: String,
    configure: @escaping @Sendable (any Channel, EventLoopPromise<Void>) throws -> Void
) -> EventLoopFuture<any Channel> {
    let loop = recorder.loop
    let ready = loop.makePromise(of: Void.self)
    let connect = ClientBootstrap(group: loop)
        .channelOption(.socketOption(.so_reuseaddr), value: 1)
        .channelOption(.tcpOption(.tcp_nodelay), value: 1)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try configure(channel, ready) }
        }
        // An address, not a host name: NIO would resolve "127.0.0.1" with getaddrinfo and Happy
        // Eyeballs for every connection (a third of the bench's CPU per connect, profiled).
        .connect(to: try! SocketAddress(ipAddress: "127.0.0.1", port: port))
    connect.whenFailure { ready.fail($0) }
    return connect.flatMap { channel in
        channel.closeFuture.whenComplete { _ in ready.fail(BenchError.closed("\(name) closed before it was ready")) }
        return ready.futureResult.map { channel }
    }
}

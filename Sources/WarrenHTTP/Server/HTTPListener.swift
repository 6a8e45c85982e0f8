import Logging
import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// Warren's HTTP listener: a plain NIO server whose connections are each served by an
/// ``HTTPConnectionHandler`` (after TLS, when configured), set up on their event loop as they
/// are accepted — no async sequence of accepted connections, no task per connection.
/// Hummingbird's own server handed every accepted connection to an async sequence and served
/// each from a task of its own (parked at once for a WebSocket): ~30 % of Warren's CPU per
/// connect in a profile of the `idle` scenario (BENCHMARKS.md).
///
/// It serves the TLS listener, the operations listener, the public listener when
/// `http.poll_door = "nio"`, and the connections the epoll door hands on (``setUp(_:)``).
///
/// A graceful shutdown closes the listening socket, tells every connection to quiesce (it
/// closes once its pending answer is written; the drain service has closed the WebSockets
/// before) and returns once all are closed; cancelled, it closes the listening socket and
/// returns at once.
package struct HTTPListener: Service {
    package let host: String
    package let port: Int
    let tls: NIOSSLContext?
    package let backlog: Int
    /// What its connections serve.
    package let edge: EdgeContext
    package let group: any EventLoopGroup
    package let logger: Logger
    /// `http.max_pending_output`: a connection's write buffer's high water mark.
    package let maxPendingOutput: Int

    package func run() async throws {
        let quiescing = ServerQuiescingHelper(group: group)
        let server: any Channel
        do {
            server = try await ServerBootstrap(group: group)
                .serverChannelOption(ChannelOptions.backlog, value: Int32(backlog))
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .serverChannelInitializer { [logger] channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(AcceptPauseHandler(logger: logger))
                        try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                    }
                }
                .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                .childChannelOption(ChannelOptions.writeBufferWaterMark, value: waterMark)
                .childChannelInitializer { [self] channel in
                    channel.eventLoop.makeCompletedFuture { try setUp(channel) }
                }
                .bind(host: host, port: port)
                .get()
        } catch {
            logger.critical("cannot listen", metadata: ["address": "\(host):\(port)", "error": "\(error)"])
            throw error
        }
        logger.info(edge.polls == nil ? "operations endpoints listening" : "HTTP server listening",
                    metadata: ["address": "\(host):\(server.localAddress?.port ?? port)"])
        let (closed, close) = AsyncStream<Never>.makeStream()
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                for await _ in closed {}
            } onGracefulShutdown: {
                let quiesced = server.eventLoop.makePromise(of: Void.self)
                quiesced.futureResult.whenComplete { _ in close.finish() }
                quiescing.initiateShutdown(promise: quiesced)
            }
        } onCancel: {
            server.close(promise: nil)
            close.finish()
        }
    }

    /// A connection's write buffer: not writable past `http.max_pending_output`, writable
    /// again once half of it drained.
    package var waterMark: ChannelOptions.Types.WriteBufferWaterMark {
        .init(low: maxPendingOutput / 2, high: maxPendingOutput)
    }

    /// The pipeline of an accepted connection (on its event loop); also of a connection the
    /// epoll door hands on.
    package func setUp(_ channel: any Channel) throws {
        let pipeline = channel.pipeline.syncOperations
        if let tls { try pipeline.addHandler(NIOSSLServerHandler(context: tls)) }
        try pipeline.addHandler(HTTPConnectionHandler(edge))
    }
}

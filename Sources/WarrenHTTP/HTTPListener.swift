import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// Warren's HTTP listener: a plain NIO server whose connections start on Warren's own
/// handlers, set up on their event loop as they are accepted — no async sequence of accepted
/// connections, no task per connection.
///
/// Each connection gets (after TLS, when configured) a ``RequestHeadTimeoutHandler``
/// (slowloris) and a ``PollConnectionHandler``, which serves pollers itself and turns a
/// WebSocket handshake into a ``WebSocketConnectionHandler``'s pipeline. Only a connection that
/// first sends something else (the router's endpoints: health, metrics, history, presence, the
/// demo page) gets hummingbird's HTTP/1 pipeline, with a ``CloseOnErrorHandler`` behind it,
/// and a task serving it through hummingbird's router.
///
/// Without TLS the public listener is the ``EpollDoor``, which takes this one's settings and
/// gives the connections it hands on the same pipeline (``setUp(_:)``); this one then serves
/// the TLS listener and the operations listener.
///
/// Hummingbird's own server handed every accepted connection to an async sequence and served
/// each from a task of its own (parked at once for a WebSocket): ~30 % of Warren's CPU per
/// connect in a profile of the `idle` scenario (BENCHMARKS.md, 2026-11-26).
///
/// A graceful shutdown closes the listening socket, tells every connection to quiesce (a
/// poller's or a router's connection closes once its pending answer is written; the drain
/// service has closed the WebSockets before) and returns once all are closed; cancelled, it
/// closes the listening socket and returns at once.
struct HTTPListener: Service {
    let host: String
    let port: Int
    let tls: NIOSSLContext?
    let headTimeout: TimeAmount
    let backlog: Int
    /// Pollers and WebSockets; nil on the operations listener (`http.internal_listen`), whose
    /// connections all go to the router.
    let polls: PollConnectionContext?
    let http1: HTTP1Channel
    let group: any EventLoopGroup
    let logger: Logger

    func run() async throws {
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
                .childChannelInitializer { [self] channel in
                    channel.eventLoop.makeCompletedFuture { try setUp(channel) }
                }
                .bind(host: host, port: port)
                .get()
        } catch {
            logger.critical("cannot listen", metadata: ["address": "\(host):\(port)", "error": "\(error)"])
            throw error
        }
        logger.info(polls == nil ? "operations endpoints listening" : "HTTP server listening",
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

    /// The pipeline of an accepted connection (on its event loop); also of a connection the
    /// ``EpollDoor`` hands on.
    func setUp(_ channel: any Channel) throws {
        let pipeline = channel.pipeline.syncOperations
        if let tls { try pipeline.addHandler(NIOSSLServerHandler(context: tls)) }
        try pipeline.addHandler(RequestHeadTimeoutHandler(timeout: headTimeout))
        let http1 = self.http1
        let logger = self.logger
        let routerPipeline = { @Sendable (channel: any Channel) -> EventLoopFuture<Void> in
            http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
                let pipeline = channel.pipeline.syncOperations
                let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
                try pipeline.addHandler(ConnectionPersistenceHandler(), position: .after(decoder))
                try pipeline.addHandler(ExpectContinueHandler(), position: .after(decoder))
                try pipeline.addHandler(CloseOnErrorHandler())
                Task { await http1.handle(value: value, logger: logger) }
            }
        }
        if let polls {
            try pipeline.addHandler(PollConnectionHandler(polls, handOn: routerPipeline))
        } else {
            // The operations listener: the router alone.
            routerPipeline(channel).whenFailure { _ in channel.close(promise: nil) }
        }
    }
}

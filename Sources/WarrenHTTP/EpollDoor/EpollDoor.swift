import Logging
import NIOCore
import ServiceLifecycle

/// The public listener without TLS, on Linux: pollers are served on raw epoll threads
/// (``EpollLoop``), each answer one `recv`, one `send` and one `setsockopt` (``AckDeferral``), by the same ``PollConnection`` as
/// on NIO. A connection whose first request is not a poll's, a new session's or a publish (a
/// WebSocket handshake, the router's endpoints, a cross-origin request under CORS) is handed to
/// NIO whole, behind the handlers ``HTTPListener`` gives its own connections, from that request
/// on.
///
/// Why not NIO: beside Nchan (BENCHMARKS.md, 2026-12-06, seventh session), a poll answer cost
/// Warren 18.6–19.4 µs of CPU on NIO's channels and 13.4 on this door, against nginx's 15–18;
/// NIO's channel machinery and the cache misses on its per-channel objects were most of the
/// difference. Written by hand because no mirrored library serves sockets without a channel
/// per connection.
///
/// It listens and shuts down as ``HTTPListener`` does: the same log lines, the same backlog
/// and head timeout, accepts paused for ``AcceptPauseHandler/pause`` when one fails; a
/// graceful shutdown closes the listening socket and each connection once no answer is
/// pending (those handed to NIO are told to quiesce) and returns once all are closed;
/// cancelled, it closes everything at once.
struct EpollDoor: Service {
    /// Takes `listener`'s place: its address, backlog, head timeout, pollers' context and the
    /// pipeline of a connection handed on (it has no TLS: a TLS listener stays NIO's).
    let listener: HTTPListener
    /// Threads serving pollers.
    let loops: Int

    func run() async throws {
        guard let polls = listener.polls else { return try await listener.run() }
        let server: EpollServer
        do {
            server = try EpollServer(host: listener.host, port: listener.port, backlog: listener.backlog, loops: loops,
                                     headTimeout: listener.headTimeout, polls: polls, group: listener.group,
                                     setUpHandedOn: { [listener] in try listener.setUp($0) }, logger: listener.logger)
        } catch {
            listener.logger.critical("cannot listen", metadata: ["address": "\(listener.host):\(listener.port)", "error": "\(error)"])
            throw error
        }
        listener.logger.info("HTTP server listening", metadata: ["address": "\(listener.host):\(server.port)", "pollers": "epoll"])
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                for await _ in server.finished {}
            } onGracefulShutdown: {
                server.shutdown()
            }
        } onCancel: {
            server.stop()
        }
    }
}

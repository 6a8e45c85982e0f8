#if os(Linux)
import Logging
import NIOCore
import ServiceLifecycle
import WarrenHTTP

/// The public listener without TLS when `http.poll_door = "epoll"` (Linux): connections are
/// served on Warren's own epoll threads (``EpollLoop``) by the same ``HTTPConnection`` as on
/// NIO, each poll answer one `recv`, one `send` and one `setsockopt` (``AckDeferral``). A
/// connection whose request needs a NIO channel (a WebSocket handshake, the router's
/// endpoints) is handed to NIO whole from that request on, behind the handler
/// ``HTTPListener`` gives its own connections.
///
/// Why not NIO for all: a poll answer costs Warren markedly less CPU here than on NIO's
/// channels (BENCHMARKS.md, "The epoll door against NIO's channels"); NIO's channel machinery
/// and the cache misses on its per-channel objects are most of the difference. Written by hand
/// because no mirrored library serves sockets without a channel per connection.
///
/// It listens and shuts down as ``HTTPListener`` does: the same log lines, the same backlog,
/// accepts paused for ``AcceptPauseHandler/pause`` when one fails; a graceful shutdown closes
/// the listening socket and each connection once no answer is pending (those handed to NIO
/// are told to quiesce) and returns once all are closed; cancelled, it closes everything at
/// once.
public struct EpollDoor: Service {
    /// Takes `listener`'s place: its address, backlog, edge and the pipeline of a connection
    /// handed on (it has no TLS: a TLS listener stays NIO's).
    let listener: HTTPListener
    /// Threads serving the connections.
    let loops: Int

    package init(listener: HTTPListener, loops: Int) {
        self.listener = listener
        self.loops = loops
    }

    public func run() async throws {
        let server: EpollServer
        do {
            server = try EpollServer(listener: listener, loops: loops)
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
#endif

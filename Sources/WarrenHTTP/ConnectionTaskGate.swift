import NIOConcurrencyHelpers
import NIOCore

/// Decides whether a connection needs hummingbird's per-connection task. Hummingbird serves a
/// connection from a task that lives as long as the connection and keeps the task-allocator
/// slabs of its deepest request until then (~10 KB even for a connection that only waits).
/// A poller's connection is served entirely by ``PollConnectionHandler`` and a WebSocket by
/// ``WebSocketConnectionHandler``, so the task ends after the first request and is started
/// again only if the connection ever sends something the poll path hands on (``need()``).
///
/// The first handler of the pipeline (it sees `channelInactive` first); everything passes
/// through. Thread-safe: the task asks from its executor, the pipeline answers from the loop.
final class ConnectionTaskGate: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    private enum State {
        /// Nothing decided yet, the task not yet asking.
        case open
        /// The first request was taken below hummingbird (a poll, a publish, a WebSocket handshake).
        case servedBelow
        /// The task asked before the first decision.
        case waiting(CheckedContinuation<Bool, Never>, start: @Sendable () -> Void)
        /// The task ended; `start` runs it again.
        case parked(start: @Sendable () -> Void)
        /// Hummingbird serves the connection (or it closed).
        case needed
    }

    private let state = NIOLockedValueBox(State.open)

    /// From the connection's task: true when it must serve the connection now; false when it
    /// may end, leaving `start` to be called when it is needed.
    func serveNow(start: @escaping @Sendable () -> Void) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let serve: Bool? = state.withLockedValue { state in
                switch state {
                case .open:
                    state = .waiting(continuation, start: start)
                    return nil
                case .servedBelow:
                    state = .parked(start: start)
                    return false
                case .needed, .waiting, .parked:
                    state = .needed
                    return true
                }
            }
            if let serve { continuation.resume(returning: serve) }
        }
    }

    /// A request was taken below hummingbird: if it is the connection's first, the task may end.
    func servedBelow() {
        let waiting: CheckedContinuation<Bool, Never>? = state.withLockedValue { state in
            switch state {
            case .open:
                state = .servedBelow
                return nil
            case .waiting(let continuation, let start):
                state = .parked(start: start)
                return continuation
            case .servedBelow, .parked, .needed:
                return nil
            }
        }
        waiting?.resume(returning: false)
    }

    /// Something needs hummingbird: the task runs (or goes on running).
    func need() {
        let action: (continuation: CheckedContinuation<Bool, Never>?, start: (@Sendable () -> Void)?) = state.withLockedValue { state in
            defer { state = .needed }
            switch state {
            case .open, .servedBelow, .needed: return (nil, nil)
            case .waiting(let continuation, _): return (continuation, nil)
            case .parked(let start): return (nil, start)
            }
        }
        action.continuation?.resume(returning: true)
        action.start?()
    }

    /// The task is waiting for the first decision (for tests).
    var isTaskWaiting: Bool { state.withLockedValue { if case .waiting = $0 { true } else { false } } }

    func channelInactive(context: ChannelHandlerContext) {
        // A parked connection that closed needs nothing more; a waiting task is let go.
        let waiting: CheckedContinuation<Bool, Never>? = state.withLockedValue { state in
            defer { state = .needed }
            if case .waiting(let continuation, _) = state { return continuation }
            return nil
        }
        waiting?.resume(returning: true)
        context.fireChannelInactive()
    }
}

extension ConnectionTaskGate {
    /// Marks `channel`'s connection as needing its task (a WebSocket upgrade), from any thread.
    static func need(on channel: any Channel) {
        channel.eventLoop.execute {
            (try? channel.pipeline.syncOperations.handler(type: ConnectionTaskGate.self))?.need()
        }
    }
}

import HummingbirdCore
import Logging
import NIOCore

/// How Warren sets up and serves an HTTP connection around hummingbird's (`Inner`):
///
/// - a ``ConnectionTaskGate`` first, so hummingbird's per-connection task runs only while the
///   connection needs it;
/// - a ``RequestHeadTimeoutHandler`` (slowloris);
/// - a ``PollConnectionHandler``, which serves pollers itself and turns a WebSocket handshake
///   into a ``WebSocketConnectionHandler``'s pipeline; hummingbird's (its HTTP/1 decoder and
///   encoder) is set up behind it only when the connection first sends something else, with a
///   ``CloseOnErrorHandler`` behind that. A poller's or a WebSocket's connection never pays
///   for them (~5 KB each, measured with heaptrack).
struct WarrenConnectionChannel<Inner: ServerChildChannel>: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        /// Hummingbird's value, once its pipeline is set up.
        let inner: EventLoopFuture<Inner.Value>
        let gate: ConnectionTaskGate
        let channel: any Channel
    }

    let inner: Inner
    let headTimeout: TimeAmount
    let polls: PollConnectionContext

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let gate = ConnectionTaskGate()
        let promise = channel.eventLoop.makePromise(of: Inner.Value.self)
        // A connection that closes before it needed hummingbird never gets its value.
        channel.closeFuture.whenComplete { _ in promise.fail(ChannelError.ioOnClosedChannel) }
        let inner = self.inner
        let setUpHummingbird: PollConnectionHandler.HandOn = { channel in
            inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
                try channel.pipeline.syncOperations.addHandler(CloseOnErrorHandler())
                promise.succeed(value)
            }
        }
        return channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(gate)
            try pipeline.addHandler(RequestHeadTimeoutHandler(timeout: headTimeout))
            try pipeline.addHandler(PollConnectionHandler(polls, handOn: setUpHummingbird))
            return Value(inner: promise.futureResult, gate: gate, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        let inner = self.inner
        let serve: @Sendable () async -> Void = {
            guard let innerValue = try? await value.inner.get() else { return }
            await inner.handle(value: innerValue, logger: logger)
        }
        if await value.gate.serveNow(start: { Task { await serve() } }) {
            await serve()
        }
    }
}

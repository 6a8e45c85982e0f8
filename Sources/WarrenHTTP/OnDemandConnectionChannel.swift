import HummingbirdCore
import Logging
import NIOCore

/// A server child channel whose per-connection task runs only while the connection needs it
/// (``ConnectionTaskGate``): for a poller's connection it ends after the first request, and
/// is started again if the connection ever sends something the poll path hands on.
struct OnDemandConnectionChannel<Inner: ServerChildChannel>: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let inner: Inner.Value
        let gate: ConnectionTaskGate
        var channel: any Channel { inner.channel }
    }

    let inner: Inner

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let gate = ConnectionTaskGate()
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(gate, position: .first)
        }.flatMap {
            inner.setup(channel: channel, logger: logger)
        }.map { Value(inner: $0, gate: gate) }
    }

    func handle(value: Value, logger: Logger) async {
        let inner = self.inner
        let start: @Sendable () -> Void = { Task { await inner.handle(value: value.inner, logger: logger) } }
        if await value.gate.serveNow(start: start) {
            await inner.handle(value: value.inner, logger: logger)
        }
    }
}

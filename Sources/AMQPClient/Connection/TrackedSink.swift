/// Forwards to the user's sink and forgets the consumer's record when it ends,
/// so that recovery does not resurrect a cancelled consumer.
final class TrackedSink: AMQPDeliverySink {
    let inner: AMQPDeliverySink
    let onFinish: @Sendable () -> Void
    init(inner: AMQPDeliverySink, onFinish: @escaping @Sendable () -> Void) {
        self.inner = inner
        self.onFinish = onFinish
    }
    func deliver(_ message: AMQPMessage) { inner.deliver(message) }
    func finish(_ error: AMQPError?) {
        onFinish()
        inner.finish(error)
    }
}

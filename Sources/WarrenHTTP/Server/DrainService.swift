import NIOConcurrencyHelpers
import ServiceLifecycle
import WarrenCore

/// The first thing to stop on SIGTERM (it runs last in the service list, so it is shut down
/// first): readiness goes 503, every socket gets close 1001 (hummingbird would close them with
/// 1000), and it waits — within the grace period — for them to go, which hands their
/// unacknowledged inbox deliveries back to RabbitMQ. Then the HTTP server and the broker link stop.
public struct DrainService: Service {
    let link: BrokerLink
    let sockets: OpenSockets
    /// Answers the long-polls parked on the event loops (those held by handler tasks are
    /// answered by their own graceful-shutdown handlers).
    let answerPolls: @Sendable () -> Void

    public func run() async throws {
        // Idle until the drain starts.
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        await withGracefulShutdownHandler {
            for await _ in stream {}
        } onGracefulShutdown: {
            continuation.finish()
        }
        link.startDraining()
        answerPolls()
        sockets.closeAll(code: CloseCode.goingAway, reason: "server shutting down")
        let deadline = ContinuousClock.now + .seconds(5)
        while sockets.count > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        link.logger.info("drain: sockets closed", metadata: ["left": "\(sockets.count)"])
    }
}

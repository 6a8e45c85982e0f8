import AMQPClient
import Atomics
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// Warren's connections to RabbitMQ, as a service.
///
/// It connects `amqp.connections` links (retrying with backoff, one log line per failed
/// attempt, until they are up or the process shuts down), declares the conversation exchange,
/// and reports readiness. Drops after that are healed by the AMQP client's own recovery;
/// readiness follows the connections' state.
public final class BrokerLink: Service, Sendable {
    public let configuration: BridgeConfiguration
    public let logger: Logger
    private let state = NIOLockedValueBox<(connections: [AMQPConnection], topologyReady: Bool, runtime: BridgeRuntime?)>(([], false, nil))
    /// This node's id (its live queue is `warren.live.<id>`).
    public let nodeID: String

    /// Warren's metrics; the link reports `warren_amqp_up` and reconnects into them.
    public let metrics: WarrenMetrics

    /// The conversation store, when `store.enabled`; its writer starts with the bridge.
    public let conversations: Conversations?

    public init(configuration: BridgeConfiguration, metrics: WarrenMetrics = .disabled, conversations: Conversations? = nil,
                logger: Logger) {
        self.metrics = metrics
        self.conversations = conversations
        self.configuration = configuration
        self.logger = logger
        self.nodeID = configuration.nodeID.isEmpty ? Self.defaultNodeID() : configuration.nodeID
    }

    /// The event loops the broker connections run on: the sockets' own loops, connection `i`
    /// on loop `i` (mod their number). An inbox consumer is put on a channel of the connection
    /// on its socket's loop (``ChannelPool``), so its deliveries are written and its client's
    /// acks sent to the broker without a thread hop, and the node's intake is spread over the
    /// loops. (One connection on a loop of its own, as before, made every inbox delivery and
    /// every ack cross threads; one connection on a shared loop put the node's whole intake
    /// behind that loop's socket writes: BENCHMARKS.md.)
    static let brokerLoops: [any EventLoop] = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())

    /// Host name and pid, reduced to a route word.
    static func defaultNodeID() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count)
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let word = String(host.unicodeScalars.map { RouteKey.isWordByte(UInt8(truncatingIfNeeded: $0.value)) && $0.isASCII ? Character($0) : "-" })
        return String("\(word.isEmpty ? "node" : word)-\(getpid())".prefix(64))
    }

    /// The running bridge, once ready.
    public var runtime: BridgeRuntime? { state.withLockedValue { $0.runtime } }

    /// Called with the runtime once the link is ready (`body` runs at once if it is already).
    private let readyHandlers = NIOLockedValueBox<[@Sendable (BridgeRuntime) -> Void]>([])

    /// Runs `body` with the runtime once the link is ready, or at once if it is: for a frontend
    /// that must listen from the start (a poll session deleted on another node is forgotten
    /// here too, whether or not this node has served a poll yet).
    public func whenReady(_ body: @escaping @Sendable (BridgeRuntime) -> Void) {
        let ready = state.withLockedValue { s -> BridgeRuntime? in
            guard s.runtime == nil else { return s.runtime }
            readyHandlers.withLockedValue { $0.append(body) }
            return nil
        }
        if let ready { body(ready) }
    }

    /// An atomic, not a lock: asked at every poll, from every event loop (a load does not write
    /// the shared cache line a lock would).
    private let draining = ManagedAtomic(false)

    /// Whether a drain has started (new sockets and polls are refused).
    public var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// Readiness goes 503 from now on (the drain has started).
    public func startDraining() {
        let first = draining.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        if first { logger.info("draining: readiness is now 503, sockets get 1001, long-polls are answered") }
    }

    /// True once the broker connection and topology are up, while the connection is healthy
    /// and the conversation store (if on) answers, and until a drain starts.
    public var isReady: Bool {
        if isDraining { return false }
        if let conversations, !conversations.isHealthy { return false }
        return isBrokerUp
    }

    /// The broker connections are up with their topology (WebSocket upgrades are refused
    /// with 503 otherwise).
    public var isBrokerUp: Bool {
        state.withLockedValue { s in
            guard s.topologyReady, !s.connections.isEmpty else { return false }
            return s.connections.allSatisfy { $0.state == .connected }
        }
    }

    /// The first connection (publishing, the live queue), once established.
    public var connection: AMQPConnection? { state.withLockedValue { $0.connections.first } }

    public func run() async throws {
        var attempt = 0
        var started: (connections: [AMQPConnection], runtime: BridgeRuntime)?
        while started == nil {
            guard let connections = await connectAll() else { return }
            do {
                started = (connections, try await setUp(on: connections))
            } catch let error as AMQPError where error.isResourceLocked {
                // Another connection holds this node's exclusive queues: a node running with the same
                // node.id, or this node's previous connection, which the broker has not yet noticed is
                // gone (a host that crashed: up to two heartbeats). Waited out, not a stop (a restart
                // loop would meet the same lock); /readyz stays 503 meanwhile.
                for c in connections { await c.close() }
                let delay = configuration.amqp.client.recovery.delay(attempt: attempt)
                attempt += 1
                logger.error("this node's queues are held by another connection: another node runs with node.id \(nodeID), or the broker has not yet noticed this node's previous connection is gone; retrying", metadata: [
                    "error": "\(error)", "retry_in_ms": "\(delay.nanoseconds / 1_000_000)",
                ])
                guard await Self.pause(delay) else { return }
            }
        }
        let (connections, runtime) = started!
        let handlers = state.withLockedValue { s -> [@Sendable (BridgeRuntime) -> Void] in
            s.runtime = runtime
            s.topologyReady = true
            return readyHandlers.withLockedValue { h in defer { h = [] }; return h }
        }
        for handler in handlers { handler(runtime) }
        logger.info("warren is ready", metadata: [
            "broker": "\(configuration.amqp.client.redactedDescription)",
            "exchange": "\(configuration.amqp.exchange)",
            "node": "\(nodeID)",
            "connections": "\(connections.count)",
        ])
        metrics.amqpUp(true)
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                for (index, connection) in connections.enumerated() {
                    let events = connection.events()
                    group.addTask { [self] in
                        for await event in events {
                            switch event {
                            case .recovering(let error):
                                metrics.amqpUp(false)
                                logger.warning("broker link lost; recovering", metadata: ["connection": "\(index)", "error": "\(error)"])
                            case .connected(let epoch):
                                metrics.amqpReconnected()
                                // The link is up (and the node ready) once every connection is.
                                let all = connections.allSatisfy { $0.state == .connected }
                                metrics.amqpUp(all)
                                logger.info(all ? "broker link up" : "broker connection up",
                                            metadata: ["connection": "\(index)", "epoch": "\(epoch)"])
                            default: break
                            }
                        }
                    }
                }
            }
        } onGracefulShutdown: { [self] in
            startDraining()
            // Sockets and polls have been closed by the drain (their users' presence leaves are
            // out); the other nodes forget this one at once. Closing the links requeues anything left.
            runtime.peers?.stop()
            runtime.exchangeWatch?.stop()
            Task { for c in connections { await c.close() } }
        }
        for c in connections { await c.close() }
        metrics.amqpUp(false)
        logger.info("broker link closed")
    }

    /// Opens the node's connections (each retried until the broker answers); nil if shutdown came first.
    private func connectAll() async -> [AMQPConnection]? {
        var opened: [AMQPConnection] = []
        let count = max(1, configuration.amqp.connections)
        for index in 0..<count {
            // The name RabbitMQ shows (management UI, `rabbitmqctl list_connections`): which node, which of its connections.
            var client = configuration.amqp.client
            client.connectionName = "warren \(nodeID) \(index + 1)/\(count)"
            guard let connection = await connectUntilUp(client, on: Self.brokerLoops[index % Self.brokerLoops.count]) else {
                for c in opened { await c.close() }
                return nil
            }
            opened.append(connection)
        }
        state.withLockedValue { $0.connections = opened }
        return opened
    }

    /// Declares the exchange and starts the bridge on `connections`; on failure they are closed.
    private func setUp(on connections: [AMQPConnection]) async throws -> BridgeRuntime {
        let channel = try await connections[0].openChannel()
        do {
            try await channel.exchangeDeclare(configuration.amqp.exchange, type: "topic", durable: true)
        } catch {
            logger.critical("cannot declare the exchange", metadata: ["exchange": "\(configuration.amqp.exchange)", "error": "\(error)"])
            for c in connections { await c.close() }
            throw error
        }
        try? await channel.close()
        do {
            return try await BridgeRuntime.start(connections: connections, configuration: configuration, nodeID: nodeID,
                                                 metrics: metrics, conversations: conversations, logger: logger)
        } catch {
            if let amqp = error as? AMQPError, amqp.isResourceLocked { throw error }  // waited out by run()
            logger.critical("cannot set up the bridge on the broker", metadata: ["error": "\(error)"])
            for c in connections { await c.close() }
            throw error
        }
    }

    /// Connects, retrying with capped backoff; nil if shutdown came first.
    private func connectUntilUp(_ client: AMQPConfiguration, on loop: any EventLoop) async -> AMQPConnection? {
        var attempt = 0
        let policy = client.recovery
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                return try await AMQPConnection.connect(configuration: client, eventLoopGroup: loop, logger: logger)
            } catch {
                let delay = policy.delay(attempt: attempt)
                attempt += 1
                logger.error("cannot reach the broker; retrying", metadata: [
                    "broker": "\(configuration.amqp.client.redactedDescription)",
                    "error": "\(error)",
                    "retry_in_ms": "\(delay.nanoseconds / 1_000_000)",
                ])
                guard await Self.pause(delay) else { return nil }
            }
        }
        return nil
    }

    /// Sleeps for a retry's backoff; false if graceful shutdown (or cancellation) came first.
    private static func pause(_ delay: TimeAmount) async -> Bool {
        do {
            try await cancelWhenGracefulShutdown { try await Task.sleep(nanoseconds: UInt64(delay.nanoseconds)) }
            return true
        } catch {
            return false
        }
    }
}

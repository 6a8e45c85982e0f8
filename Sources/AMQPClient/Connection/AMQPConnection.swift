import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A connection to an AMQP 0-9-1 broker that recovers by itself.
///
/// When the link drops it reconnects with capped, jittered exponential backoff,
/// reopens the channels (with their qos and confirm mode), re-declares the
/// recorded exchanges, queues and bindings, and re-creates the consumers, whose
/// sequences simply carry on. Calls made while recovering fail at once with
/// ``AMQPError/notConnected``; publishes in flight at the drop fail, never
/// silently succeed.
public final class AMQPConnection: Sendable {
    public let configuration: AMQPConfiguration
    let group: any EventLoopGroup

    /// The event loop the connection always runs on (its channel and every recovery's), when
    /// it was connected with a single loop as its group; nil when the group has several.
    public var eventLoop: (any EventLoop)? { group as? any EventLoop }
    let logger: Logger
    let shared: NIOLockedValueBox<Shared>

    struct Link: Sendable {
        let channel: any Channel
        let epoch: UInt64
        /// Which of `configuration.endpoints` it is connected to.
        let endpoint: Int
        let params: NegotiatedParameters
        let ended: EventLoopFuture<AMQPError>
    }

    struct ChannelRecord: Sendable {
        var channel: AMQPChannel
        var qos: (prefetchCount: UInt16, prefetchSize: UInt32, global: Bool)?
        var confirm = false
        var returns: [AsyncStream<AMQPReturnedMessage>.Continuation] = []
    }

    struct Shared: Sendable {
        var link: Link?
        var state: AMQPConnectionState = .connecting
        var epoch: UInt64 = 0
        var channels: [UInt16: ChannelRecord] = [:]
        var topology = RecordedTopology()
        var observers: [Int: AsyncStream<AMQPConnectionEvent>.Continuation] = [:]
        var nextObserver = 0
        var closedByUser = false
        var recovery: Task<Void, Never>?
        var consumerCounter: UInt64 = 0
        var blocked: String?
        /// The broker of `configuration.endpoints` connected to last.
        var endpoint = 0
    }

    private init(configuration: AMQPConfiguration, group: any EventLoopGroup, logger: Logger) {
        self.configuration = configuration
        self.group = group
        self.logger = logger
        self.shared = NIOLockedValueBox(Shared())
    }

    /// Connects once; throws if that first attempt fails (the caller decides whether to retry).
    /// Once connected, drops are recovered from automatically.
    public static func connect(
        configuration: AMQPConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "amqp")
    ) async throws -> AMQPConnection {
        let connection = AMQPConnection(configuration: configuration, group: eventLoopGroup, logger: logger)
        // Each broker of the list once, in order; the last failure if none answers.
        var failure: (any Error)?
        for index in configuration.endpoints.indices {
            do {
                let link = try await connection.makeLink(epoch: 1, endpoint: index)
                connection.install(link)
                return connection
            } catch {
                failure = error
            }
        }
        throw failure ?? AMQPError.notConnected
    }

    /// The current state.
    public var state: AMQPConnectionState { shared.withLockedValue { $0.state } }

    /// The parameters negotiated on the current link, if connected.
    public var negotiated: NegotiatedParameters? { shared.withLockedValue { $0.link?.params } }

    /// Whether the broker has blocked publishing (a resource alarm), and why.
    public var blockedReason: String? { shared.withLockedValue { $0.blocked } }

    /// A stream of connection events from now on. It ends when the connection is closed.
    public func events() -> AsyncStream<AMQPConnectionEvent> {
        let (stream, continuation) = AsyncStream<AMQPConnectionEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let closed: AMQPError?? = shared.withLockedValue { s in
            if case .closed(let e) = s.state { return .some(e) }
            let id = s.nextObserver
            s.nextObserver += 1
            s.observers[id] = continuation
            continuation.onTermination = { [weak self] _ in
                _ = self?.shared.withLockedValue { $0.observers.removeValue(forKey: id) }
            }
            return .none
        }
        if let closed {
            continuation.yield(.closed(closed))
            continuation.finish()
        }
        return stream
    }

    /// Opens a channel on the lowest free id.
    public func openChannel() async throws -> AMQPChannel {
        let (link, id, channel): (Link, UInt16, AMQPChannel) = try shared.withLockedValue { s in
            guard let link = s.link else { throw s.closedByUser ? AMQPError.closedByUser : AMQPError.notConnected }
            let max = link.params.channelMax == 0 ? UInt16.max : link.params.channelMax
            guard let id = (1...max).first(where: { s.channels[$0] == nil }) else { throw AMQPError.channelLimitReached(max) }
            let channel = AMQPChannel(id: id, connection: self)
            s.channels[id] = ChannelRecord(channel: channel)
            return (link, id, channel)
        }
        do {
            _ = try await send(.openChannel(id, link.channel.eventLoop.makePromise()), on: link)
        } catch {
            _ = shared.withLockedValue { $0.channels.removeValue(forKey: id) }
            throw error
        }
        return channel
    }

    /// Closes the connection gracefully. Consumer sequences end normally; recovery stops.
    public func close() async {
        let (link, task, sinks): (Link?, Task<Void, Never>?, [AMQPDeliverySink]) = shared.withLockedValue { s in
            guard !s.closedByUser else { return (nil, nil, []) }
            s.closedByUser = true
            let sinks = s.topology.orderedConsumers.map(\.sink)
            for c in s.topology.orderedConsumers { s.topology.deleteConsumer(c.consume.consumerTag) }
            return (s.link, s.recovery, sinks)
        }
        task?.cancel()
        if let link {
            let promise = link.channel.eventLoop.makePromise(of: Void.self)
            link.channel.writeAndFlush(AMQPCommand.close(promise)).whenFailure { _ in promise.succeed(()) }
            _ = try? await promise.futureResult.get()
            _ = try? await link.channel.closeFuture.get()
        }
        for sink in sinks { sink.finish(nil) }
        finishClosed(nil)
    }

    // MARK: internal plumbing used by AMQPChannel

    func currentLink() throws -> Link {
        try shared.withLockedValue { s in
            if let link = s.link { return link }
            throw s.closedByUser ? AMQPError.closedByUser : AMQPError.notConnected
        }
    }

    /// Writes a command to a link and waits for its promise.
    func send(_ command: AMQPCommand, on link: Link) async throws -> RPCResponse {
        let promise: EventLoopPromise<RPCResponse>
        switch command {
        case .openChannel(_, let p), .request(_, _, _, let p), .closeChannel(_, let p): promise = p
        default: preconditionFailure("send(_:on:) is for commands that answer")
        }
        link.channel.writeAndFlush(command).whenFailure { _ in promise.fail(AMQPError.notConnected) }
        return try await promise.futureResult.get()
    }

    func request(_ method: AMQPMethod, channel: UInt16, sink: AMQPDeliverySink? = nil, on link: Link? = nil) async throws -> RPCResponse {
        try Self.validate(method)
        let link = try link ?? currentLink()
        return try await send(.request(channel: channel, method, sink: sink, link.channel.eventLoop.makePromise()), on: link)
    }

    func nextConsumerTag(channel: UInt16) -> String {
        shared.withLockedValue { s in
            s.consumerCounter += 1
            return "warren-amqp-\(channel)-\(s.consumerCounter)"
        }
    }

    func record(_ body: (inout RecordedTopology) -> Void) {
        shared.withLockedValue { body(&$0.topology) }
    }

    /// Changes the record of channel `id`; false when there is none (the channel is closed).
    @discardableResult
    func updateChannel(_ id: UInt16, _ body: (inout ChannelRecord) -> Void) -> Bool {
        shared.withLockedValue { s in
            guard s.channels[id] != nil else { return false }
            body(&s.channels[id]!)
            return true
        }
    }

    /// The channel is closed for good (by us or by a channel error): forget it and its consumers.
    func forgetChannel(_ id: UInt16, error: AMQPError?) {
        let (record, consumers) = shared.withLockedValue { s in
            (s.channels.removeValue(forKey: id), s.topology.deleteConsumers(onChannel: id))
        }
        record?.channel.markClosed(error ?? .channelNotOpen(id))
        record?.returns.forEach { $0.finish() }
        for c in consumers { c.sink.finish(error) }
    }

    static func validate(_ method: AMQPMethod) throws(AMQPError) {
        var scratch = ByteBuffer()
        do { try method.encode(into: &scratch) } catch { throw .invalidArgument("\(error)") }
    }

    // MARK: links

    /// Connects to `configuration.endpoints[endpoint]` (remembered as the current one once up).
    private func makeLink(epoch: UInt64, endpoint index: Int) async throws -> Link {
        let endpoint = configuration.endpoints[index]
        let tls = try configuration.tls ? TLSSetup.make(configuration) : nil
        var props: FieldTable = [:]
        if let name = configuration.connectionName { props["connection_name"] = .string(name) }
        let smConfig = ConnectionStateMachine.Configuration(
            username: configuration.username, password: configuration.password, vhost: configuration.vhost,
            clientProperties: props, heartbeat: configuration.heartbeat, channelMax: configuration.channelMax,
            frameMax: configuration.frameMax)
        let events = AMQPLinkEvents(
            blockedChanged: { [weak self] reason in self?.blockedChanged(reason) },
            channelClosed: { [weak self] id, error in self?.forgetChannel(id, error: error) },
            returned: { [weak self] id, message in self?.returned(id, message) })
        let logger = self.logger
        // The handler's outcomes, taken where it is made: looked up in the pipeline afterwards,
        // it may be gone already (a broker that refuses the login closes the connection within
        // a millisecond of the connect), and the lookup's `notFound` would hide why.
        let outcomes = NIOLockedValueBox<(established: EventLoopFuture<NegotiatedParameters>, ended: EventLoopFuture<AMQPError>)?>(nil)
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(configuration.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(try tls.handler()) }
                    let handler = AMQPConnectionHandler(configuration: smConfig, epoch: epoch, events: events,
                                                        eventLoop: channel.eventLoop, logger: logger)
                    outcomes.withLockedValue { $0 = (handler.established.futureResult, handler.ended.futureResult) }
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        let channel: any Channel
        do {
            // An IP literal needs no resolver (NIO's would run getaddrinfo and Happy Eyeballs).
            if let address = try? SocketAddress(ipAddress: endpoint.host, port: endpoint.port) {
                channel = try await bootstrap.connect(to: address).get()
            } else {
                channel = try await bootstrap.connect(host: endpoint.host, port: endpoint.port).get()
            }
        } catch {
            throw AMQPError.connectionFailed("\(endpoint.host):\(endpoint.port): \(error)")
        }
        guard let futures = outcomes.withLockedValue({ $0 }) else {
            channel.close(promise: nil)
            throw AMQPError.connectionFailed("\(endpoint.host):\(endpoint.port): the connection was not set up")
        }
        let timeout = channel.eventLoop.scheduleTask(in: configuration.connectTimeout) {
            channel.close(promise: nil)
        }
        do {
            let params = try await futures.0.get()
            timeout.cancel()
            return Link(channel: channel, epoch: epoch, endpoint: index, params: params, ended: futures.1)
        } catch let error as AMQPError {
            timeout.cancel()
            channel.close(promise: nil)
            if case .connectionLost = error { throw AMQPError.connectionFailed("handshake did not complete: \(error)") }
            throw error
        }
    }

    private func install(_ link: Link) {
        let observers = shared.withLockedValue { s -> [AsyncStream<AMQPConnectionEvent>.Continuation] in
            s.link = link
            s.epoch = link.epoch
            s.endpoint = link.endpoint
            s.state = .connected
            s.blocked = nil
            return Array(s.observers.values)
        }
        let endpoint = configuration.endpoints[link.endpoint]
        logger.info("AMQP connected", metadata: ["broker": "\(endpoint.host):\(endpoint.port)", "epoch": "\(link.epoch)"])
        observers.forEach { $0.yield(.connected(epoch: link.epoch)) }
        link.ended.whenSuccess { [weak self] error in self?.linkEnded(link, error: error) }
    }

    private func linkEnded(_ link: Link, error: AMQPError) {
        let (observers, start): ([AsyncStream<AMQPConnectionEvent>.Continuation], Bool) = shared.withLockedValue { s in
            guard s.link?.epoch == link.epoch else { return ([], false) }
            s.link = nil
            guard !s.closedByUser, configuration.recovery.enabled else { return ([], false) }
            s.state = .recovering(error)
            return (Array(s.observers.values), true)
        }
        guard start else {
            if !shared.withLockedValue({ $0.closedByUser }) {
                logger.error("AMQP connection lost and recovery is disabled", metadata: ["error": "\(error)"])
                let sinks = shared.withLockedValue { s in s.topology.orderedConsumers.map(\.sink) }
                sinks.forEach { $0.finish(error) }
                finishClosed(error)
            }
            return
        }
        logger.warning("AMQP connection lost; recovering", metadata: ["error": "\(error)"])
        observers.forEach { $0.yield(.recovering(error)) }
        let task = Task { [weak self] in
            guard let self else { return }
            await self.recoveryLoop(after: link.epoch)
        }
        shared.withLockedValue { $0.recovery = task }
    }

    private func recoveryLoop(after epoch: UInt64) async {
        var attempt = 0
        var nextEpoch = epoch + 1
        while !Task.isCancelled, !shared.withLockedValue({ $0.closedByUser }) {
            let delay = configuration.recovery.delay(attempt: attempt)
            attempt += 1
            try? await Task.sleep(nanoseconds: UInt64(max(0, delay.nanoseconds)))
            if Task.isCancelled || shared.withLockedValue({ $0.closedByUser }) { return }
            // With several brokers, each attempt tries the next one: the one just lost first
            // only after every other (a cluster node that died is likely to stay down a while).
            let count = configuration.endpoints.count
            let endpoint = (shared.withLockedValue { $0.endpoint } + attempt) % count
            do {
                let link = try await makeLink(epoch: nextEpoch, endpoint: endpoint)
                nextEpoch += 1
                let declared: Set<String>
                do {
                    declared = try await restoreTopology(on: link)
                } catch {
                    link.channel.close(promise: nil)
                    throw error
                }
                // The consumers to start again are those recorded before the link is installed:
                // one its user starts on the installed link is recorded once it runs there.
                let consumers = shared.withLockedValue { s in s.closedByUser ? nil : s.topology.orderedConsumers }
                guard let consumers else {
                    link.channel.close(promise: nil)
                    return
                }
                install(link)
                logger.info("AMQP connection recovered", metadata: ["attempts": "\(attempt)"])
                await restoreConsumers(consumers, on: link, declared: declared)
                return
            } catch {
                logger.warning("AMQP recovery attempt failed", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
            }
        }
    }

    /// Replays channels, exchanges, queues and bindings on a fresh link, in that order, and
    /// returns the queues it declared. An entity that fails is reported and skipped; only a
    /// dead link aborts the restore. Consumers come back after the link is installed
    /// (``restoreConsumers(_:on:declared:)``).
    private func restoreTopology(on link: Link) async throws -> Set<String> {
        let (channels, topology) = shared.withLockedValue { s in (s.channels, s.topology) }
        for (id, record) in channels.sorted(by: { $0.key < $1.key }) {
            let started = ContinuousClock.now
            defer { reportSlowRecoveryStep("channel \(id)", since: started) }
            do {
                _ = try await send(.openChannel(id, link.channel.eventLoop.makePromise()), on: link)
                if let qos = record.qos {
                    _ = try await request(.basicQos(prefetchSize: qos.prefetchSize, prefetchCount: qos.prefetchCount,
                                                    global: qos.global), channel: id, on: link)
                }
                if record.confirm { _ = try await request(.confirmSelect(noWait: false), channel: id, on: link) }
            } catch let error as AMQPError where !Self.isLinkFailure(error) {
                reportRecoveryFailure("channel \(id)", error)
                forgetChannel(id, error: error)
            }
        }

        var scratch = RecoveryChannel(connection: self, link: link, reservedIDs: Set(channels.keys))
        for exchange in topology.orderedExchanges {
            try await scratch.run("exchange \(exchange.declare.exchange)") { id in
                _ = try await self.request(.exchangeDeclare(exchange.declare), channel: id, on: link)
            }
        }
        // The queues this attempt declared (under their names now): a 404 on one of them later
        // retries the attempt; one whose declaration failed and was skipped is not among them.
        var declared = Set<String>()
        for queue in topology.orderedQueues {
            try await scratch.run("queue \(queue.name)") { id in
                var declare = queue.declare
                declare.queue = queue.serverNamed ? "" : queue.name
                guard case .method(.queueDeclareOk(let ok)) = try await self.request(.queueDeclare(declare), channel: id, on: link) else {
                    return
                }
                if ok.queue != queue.name { self.record { $0.renameQueue(queue.name, to: ok.queue) } }
                declared.insert(ok.queue)
            }
        }
        let bindings = shared.withLockedValue { $0.topology.bindings }
        for b in bindings {
            try await scratch.run("binding \(b.exchange) -> \(b.queue) (\(b.routingKey))") { id in
                do {
                    _ = try await self.request(.queueBind(QueueBind(queue: b.queue, exchange: b.exchange, routingKey: b.routingKey,
                                                                     arguments: b.arguments)), channel: id, on: link)
                } catch let error as AMQPError {
                    throw Self.retryIfRedeclaredQueueVanished(error, queue: b.queue, declared: declared)
                }
            }
        }
        try await scratch.close()
        return declared
    }

    /// Starts the recorded consumers again on a link that is already installed, so that the
    /// connection publishes (and reports itself connected) while a consumer whose queue is slow
    /// to answer waits: a quorum queue whose leader died with a cluster node takes seconds to
    /// accept a consumer, and RabbitMQ 3.10 may even close the connection over it. The consumers
    /// of each channel are started in order, the channels side by side.
    ///
    /// A consumer cancelled by its user meanwhile is skipped, or cancelled again once started.
    /// A failure that needs a new link (the link died; a queue this restore declared vanished;
    /// a 405 from a broker that has not yet noticed the old connection died) closes this link:
    /// its loss starts the next recovery, which restores everything again.
    private func restoreConsumers(_ consumers: [RecordedTopology.Consumer], on link: Link, declared: Set<String>) async {
        let byChannel = Dictionary(grouping: consumers, by: \.channel)
        await withTaskGroup(of: Void.self) { group in
            for (_, onChannel) in byChannel {
                group.addTask {
                    for consumer in onChannel {
                        guard await self.restoreConsumer(consumer, on: link, declared: declared) else {
                            link.channel.close(promise: nil)
                            return
                        }
                    }
                }
            }
        }
    }

    /// Starts one recorded consumer again; false when the link must be replaced.
    private func restoreConsumer(_ consumer: RecordedTopology.Consumer, on link: Link, declared: Set<String>) async -> Bool {
        let tag = consumer.consume.consumerTag
        guard shared.withLockedValue({ $0.topology.hasConsumer(tag) }) else { return true }
        let started = ContinuousClock.now
        defer { reportSlowRecoveryStep("consumer \(tag) on \(consumer.consume.queue)", since: started) }
        do {
            do {
                _ = try await request(.basicConsume(consumer.consume), channel: consumer.channel, sink: consumer.sink, on: link)
            } catch let error as AMQPError {
                throw Self.retryIfRedeclaredQueueVanished(error, queue: consumer.consume.queue, declared: declared)
            }
            if !shared.withLockedValue({ $0.topology.hasConsumer(tag) }) {
                // Cancelled by its user while it was being started: its cancel may have reached
                // the broker first, so cancel what this restore started.
                _ = try? await request(.basicCancel(consumerTag: tag, noWait: false), channel: consumer.channel, on: link)
            }
            return true
        } catch let error as AMQPError where !Self.isLinkFailure(error) {
            if shared.withLockedValue({ $0.topology.deleteConsumer(tag) }) != nil {
                reportRecoveryFailure("consumer \(tag)", error)
                consumer.sink.finish(error)
            }
            return true
        } catch {
            if !shared.withLockedValue({ $0.closedByUser }) {
                logger.warning("AMQP consumer restore needs a new link", metadata: ["consumer": "\(tag)", "error": "\(error)"])
            }
            return false
        }
    }

    /// A bind or consume during restore answered 404 for a queue this restore had just declared
    /// again: the broker was still removing the queue's previous incarnation (an exclusive queue
    /// whose cluster node died, still listed when it was declared) and took the declaration for
    /// it. Skipping the entity would leave a consumer or binding gone for good, so the error
    /// becomes a link failure: the whole attempt is retried after backoff, on a broker that has
    /// finished its clean-up. Any other error is returned as it is.
    static func retryIfRedeclaredQueueVanished(_ error: AMQPError, queue: String, declared: Set<String>) -> AMQPError {
        guard case .channelClosed(let reason) = error, reason.replyCode == ReplyCode.notFound, declared.contains(queue) else {
            return error
        }
        return .connectionLost("queue '\(queue)' vanished right after it was declared again (\(reason.replyText)); restoring again")
    }

    /// Whether a failure during restore aborts the whole attempt (retried after backoff)
    /// rather than skipping one entity. 405 RESOURCE_LOCKED is transient: the broker has
    /// not yet noticed that our previous connection, which owns an exclusive queue, is dead.
    static func isLinkFailure(_ error: AMQPError) -> Bool {
        switch error {
        case .channelClosed: return error.isResourceLocked
        case .channelNotOpen, .invalidArgument: return false
        default: return true
        }
    }

    /// Logs a restore step that took longer than a second: a broker still electing a quorum
    /// queue's leader, or a node that is busy, shows up here rather than as a silent pause.
    func reportSlowRecoveryStep(_ entity: String, since started: ContinuousClock.Instant) {
        let took = ContinuousClock.now - started
        guard took > .seconds(1) else { return }
        logger.warning("AMQP recovery step was slow", metadata: ["entity": "\(entity)", "seconds": "\(took)"])
    }

    func reportRecoveryFailure(_ entity: String, _ error: AMQPError) {
        logger.error("AMQP recovery skipped an entity", metadata: ["entity": "\(entity)", "error": "\(error)"])
        let observers = shared.withLockedValue { Array($0.observers.values) }
        observers.forEach { $0.yield(.recoveryFailed(entity: entity, error: error)) }
    }

    private func blockedChanged(_ reason: String?) {
        let observers = shared.withLockedValue { s in
            s.blocked = reason
            return Array(s.observers.values)
        }
        if let reason {
            logger.warning("AMQP broker blocked publishing", metadata: ["reason": "\(reason)"])
            observers.forEach { $0.yield(.blocked(reason: reason)) }
        } else {
            logger.info("AMQP broker unblocked publishing")
            observers.forEach { $0.yield(.unblocked) }
        }
    }

    private func returned(_ channel: UInt16, _ message: AMQPReturnedMessage) {
        let sinks = shared.withLockedValue { $0.channels[channel]?.returns ?? [] }
        sinks.forEach { $0.yield(message) }
    }

    private func finishClosed(_ error: AMQPError?) {
        let (observers, channels) = shared.withLockedValue { s in
            s.state = .closed(error)
            s.link = nil
            let o = Array(s.observers.values)
            s.observers.removeAll()
            let c = Array(s.channels.values)
            s.channels.removeAll()
            return (o, c)
        }
        for record in channels {
            record.channel.markClosed(error ?? .closedByUser)
            record.returns.forEach { $0.finish() }
        }
        observers.forEach {
            $0.yield(.closed(error))
            $0.finish()
        }
    }
}

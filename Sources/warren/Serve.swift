import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import UnixSignals
import NIOCore
import WarrenCore
#if os(Linux)
import WarrenEpollDoor
#endif
import WarrenHTTP
import WarrenStore

/// `warren serve` (the default): runs the bridge until SIGINT or SIGTERM (SIGHUP is ignored).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the bridge until SIGINT or SIGTERM.")
    @OptionGroup var options: ConfigOption

    func run() async throws {
        let config = try options.load()
        LoggingSystem.bootstrap { label in
            if config.log.json { return JSONLogHandler(label: label, level: config.log.level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = config.log.level
            return handler
        }
        let logger = Logger(label: "warren")
        logger.info("warren \(WarrenVersion.string) starting")
        if config.auth.mode == .none {
            logger.warning("auth.mode = \"none\": anyone can connect as any user (?user=). For development only.")
        }
        let tokens = config.auth.mode == .token ? try await config.auth.makeAuthority() : nil
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = WarrenMetrics.durationBuckets
        factory.valueHistogramBuckets["warren_store_batch_size"] = StoreMetrics.batchBuckets
        MetricsSystem.bootstrap(factory)
        let metrics = WarrenMetrics(classifier: RouteClassifier(config.routes), registry: registry)
        var conversations: Conversations?
        if config.store.enabled {
            let store: any ConversationStore
            do { store = try await StoreBackends.open(config.store, logger: logger) } catch {
                logger.critical("cannot open the conversation store", metadata: [
                    "url": "\(StoreSettings.Backend(url: config.store.url)?.redacted ?? "")", "error": "\(error)"])
                throw ExitCode.failure
            }
            conversations = Conversations(store: store, settings: config.store, recovery: config.recover, metrics: StoreMetrics(),
                                          logger: logger)
        }
        let link = BrokerLink(configuration: config, metrics: metrics, conversations: conversations, logger: logger)
        let sessions = await PollSessionCodec.make(secret: config.auth.secret)
        let (app, drain) = try HTTPFrontend.application(configuration: config, link: link, tokens: tokens, sessions: sessions,
                                                        logger: logger, door: { listener in Self.door(config.http.pollDoor, listener) })
        // SIGTERM / SIGINT start a graceful drain bounded by shutdown.grace; past it, services are cancelled.
        // Services stop in reverse order: the drain (sockets → 1001) first, then the HTTP server and broker link.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: app), .init(service: drain)]
        if let conversations { services.insert(.init(service: conversations), at: 0) }
        var groupConfiguration = ServiceGroupConfiguration(services: services,
                                                           gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(config.shutdownGrace)
        groupConfiguration.maximumCancellationDuration = .seconds(2)
        // SIGHUP asks most daemons to reload (nginx, Centrifugo) and comes when a terminal hangs up; its
        // default action ended Warren at once, with no drain. Nothing here reloads: it is noted and ignored.
        let hangUps = await UnixSignalsSequence(trapping: .sighup)
        let hangUpWatch = Task {
            for await _ in hangUps {
                logger.warning("SIGHUP ignored: the configuration is read only at start (restart to apply a change; SIGTERM drains first)")
            }
        }
        defer { hangUpWatch.cancel() }
        do {
            try await ServiceGroup(configuration: groupConfiguration).run()
        } catch {
            // A service failed (say the listening port is taken): the store may never have run.
            logger.critical("warren stopped on an error", metadata: ["error": "\(error)"])
            await conversations?.store.close()
            throw ExitCode.failure
        }
        logger.info("warren stopped")
    }

    /// What serves the public listener without TLS (`http.poll_door`): the epoll door on Linux
    /// when asked for, else the NIO listener itself.
    static func door(_ door: BridgeConfiguration.PollDoor, _ listener: HTTPListener) -> any Service {
        #if os(Linux)
        if door == .epoll { return EpollDoor(listener: listener, loops: System.coreCount) }
        #endif
        return listener
    }
}

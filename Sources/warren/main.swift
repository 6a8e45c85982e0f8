import ArgumentParser
import Foundation
import Hummingbird
import Logging
import WarrenCore
import WarrenHTTP

/// `warren`: the gateway daemon. `serve` is the default subcommand.
@main
struct Warren: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A chat gateway beside RabbitMQ for WebSocket, HTTP-polling and AMQP clients.",
        subcommands: [Serve.self, Check.self],
        defaultSubcommand: Serve.self)
}

struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "Path to bridge.toml.")
    var config: String = "bridge.toml"

    func load() throws -> BridgeConfiguration {
        let text: String
        do {
            text = try String(contentsOfFile: config, encoding: .utf8)
        } catch {
            throw ValidationError("cannot read \(config): \(error.localizedDescription)")
        }
        do {
            return try BridgeConfiguration.parse(text, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError("invalid configuration in \(config): \(error)")
        }
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the bridge until SIGINT or SIGTERM.")
    @OptionGroup var options: ConfigOption

    func run() async throws {
        let config = try options.load()
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = config.log.level
            return handler
        }
        let logger = Logger(label: "warren")
        let link = BrokerLink(configuration: config, logger: logger)
        let app = HTTPFrontend.application(configuration: config, link: link, logger: logger)
        try await app.runService()
        logger.info("warren stopped")
    }
}

struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Validate the configuration without connecting.")
    @OptionGroup var options: ConfigOption

    func run() async throws {
        let config = try options.load()
        print("configuration OK: broker \(config.amqp.client.redactedDescription), exchange \(config.amqp.exchange), listen \(config.http.listen)")
    }
}

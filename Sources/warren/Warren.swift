import ArgumentParser
import WarrenCore

/// `warren`: the gateway daemon. `serve` is the default subcommand.
@main
struct Warren: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A chat gateway beside RabbitMQ for WebSocket, HTTP-polling and AMQP clients.",
        version: WarrenVersion.string,
        subcommands: [Serve.self, Check.self, Token.self, Chat.self],
        defaultSubcommand: Serve.self)
}

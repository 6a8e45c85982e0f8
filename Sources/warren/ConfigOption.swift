import ArgumentParser
import Foundation
import WarrenCore

/// `--config`, shared by every subcommand, and the configuration it names.
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

import ArgumentParser
import Foundation
import WarrenCore

/// `--config`, shared by every subcommand, and the configuration it names.
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "Path to bridge.toml.")
    var config: String = "bridge.toml"

    /// The configuration; a file that cannot be read or is invalid ends the command with the
    /// reason on standard error and exit status 78 (`EX_CONFIG`): not a usage error, so no
    /// usage text follows it.
    func load() throws -> BridgeConfiguration {
        let text: String
        switch TextFile.read(config) {
        case .success(let contents): text = contents
        case .failure(let failure): throw Self.fail("cannot read \(config): \(failure)")
        }
        do {
            return try BridgeConfiguration.parse(text, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw Self.fail("invalid configuration in \(config): \(error)")
        }
    }

    /// `EX_CONFIG` from sysexits.h.
    static let configurationError = ExitCode(78)

    /// Writes `Error: <reason>` to standard error; the status to end the command with.
    static func fail(_ reason: String) -> ExitCode {
        FileHandle.standardError.write(Data("Error: \(reason)\n".utf8))
        return configurationError
    }
}

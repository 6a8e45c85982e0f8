import ArgumentParser
import Foundation
import WarrenCore

/// `warren check`: validates the configuration and prints the effective one.
struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Validate the configuration without connecting.")
    @OptionGroup var options: ConfigOption

    func run() async throws {
        let config = try options.load()
        print("# configuration OK — the effective configuration (defaults and environment applied, secrets masked):")
        print(config.effectiveDescription)
    }
}

import ArgumentParser
import Foundation
import WarrenCore

/// `warren token`: mints a token for a user (development and scripts).
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a token for a user, signed with the configured secret or private key.")
    @OptionGroup var options: ConfigOption
    @Option(help: "The user (the token's sub).") var user: String
    @Option(help: "How long it is valid: 90s, 30m, 1h, 7d.") var ttl: String = "1h"

    /// Bad arguments are usage errors of this subcommand (its usage printed), found before the configuration is read.
    func validate() throws {
        guard RouteKey.isValidWord(user) else { throw ValidationError("--user must be \(RouteKey.wordRule)") }
        guard DurationText.seconds(ttl) != nil else { throw ValidationError("--ttl must look like 90s, 30m, 1h or 7d (at most 36500d)") }
    }

    func run() async throws {
        let config = try options.load()
        let seconds = TimeInterval(DurationText.seconds(ttl)!)
        let authority: TokenAuthority
        do { authority = try await config.auth.makeAuthority() } catch {
            throw ConfigOption.fail("cannot sign tokens: \(error) (HS256: set auth.secret or WARREN_AUTH_SECRET; RS256/ES256: auth.private_key_file)")
        }
        guard authority.canMint else {
            throw ConfigOption.fail("\(config.auth.algorithm.rawValue) needs auth.private_key_file to sign tokens")
        }
        print(try await authority.mint(user: user, ttl: seconds))
    }
}

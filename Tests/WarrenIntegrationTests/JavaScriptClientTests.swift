import Foundation
import Testing

/// Issue 17: the JavaScript client (`clients/js/warren.js`) against a real Warren and RabbitMQ.
/// The cases are `clients/js/test/cases.js`, run by `clients/js/test/run.mjs` in Node and in
/// headless Chromium (Debian's `chromium`, which `scripts/test.sh` installs when missing),
/// through proxies it cuts, holds and refuses: publish/subscribe live and inbox, inbox
/// redelivery after a reconnect, a publish retried across a forced disconnect arriving once,
/// subscriptions after Warren's broker connection is closed, token refresh on 4401, the
/// long-poll fallback when `/v1/ws` is refused (and the move back), and a silent connection
/// (WebSocket or long-poll) noticed and replaced.
@Suite("JavaScript client", .serialized)
struct JavaScriptClientTests {
    static let secret = "js-client-test-secret-0123456789abcdef"

    @Test func inNode() async throws {
        try await run(browser: nil)
    }

    @Test func inHeadlessChromium() async throws {
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let browser = try #require(chromium, "chromium is not installed (scripts/test.sh installs it)")
        try await run(browser: browser)
    }

    private func run(browser: String?) async throws {
        // Token mode with no leeway: the 4401 case's token expires two seconds in.
        let warren = try await WarrenInstance.start(["WARREN_AUTH_MODE": "token", "WARREN_AUTH_SECRET": Self.secret,
                                                     "WARREN_AUTH_LEEWAY": "0"])
        defer { warren.process.terminate() }
        var arguments = ["node", "--experimental-websocket", "clients/js/test/run.mjs",
                         "--warren", "http://127.0.0.1:\(warren.port)", "--secret", Self.secret]
        if let browser { arguments += ["--browser", browser] }
        let node = try WarrenProcess(arguments, executable: URL(fileURLWithPath: "/usr/bin/env"))
        let status = await node.waitForExit(timeout: .seconds(400))
        if status == nil { node.terminate() }
        let lines = node.log.split(separator: "\n")
        for line in lines where line.hasPrefix("not ok") { Issue.record("\(line)") }
        let passed = lines.filter { $0.hasPrefix("ok ") }.count
        #expect(status == 0, "\(node.log)")
        #expect(passed >= 12 && lines.contains("js client tests: all passed"), "\(node.log)")
    }
}

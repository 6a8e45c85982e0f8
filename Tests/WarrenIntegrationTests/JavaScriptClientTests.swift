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
@Suite("JavaScript client", .serialized,
       .enabled(if: ProcessInfo.processInfo.environment["WARREN_TEST_NODE"] != "0",
                "needs Node.js 20 or later and npm (scripts/test.sh says why it is skipped)"))
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

    /// The package as a user gets it: `npm pack` makes the tarball, `npm install` adds it to an
    /// empty project with no network, and a script that imports it by its package name chats
    /// through Warren (two users, an awaited subscription, a publish, its delivery).
    @Test func thePackedPackageInstallsOfflineAndChats() async throws {
        let warren = try await WarrenInstance.start()
        defer { warren.process.terminate() }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("warren-js-\(UUID().uuidString.prefix(8))")
        let app = dir.appendingPathComponent("app")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func run(_ arguments: [String]) async throws -> String {
            let process = try WarrenProcess(arguments, executable: URL(fileURLWithPath: "/usr/bin/env"))
            let status = await process.waitForExit(timeout: .seconds(120))
            if status == nil { process.terminate() }
            #expect(status == 0, "\(arguments.joined(separator: " ")): \(process.log)")
            return process.log
        }
        _ = try await run(["npm", "pack", "./clients/js", "--pack-destination", dir.path, "--silent"])
        let tarball = try #require(try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasSuffix(".tgz") },
                                   "npm pack made no tarball")
        try #"{"name":"app","version":"1.0.0","private":true,"type":"module"}"#.write(to: app.appendingPathComponent("package.json"),
                                                                                       atomically: true, encoding: .utf8)
        _ = try await run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--prefix", app.path,
                           dir.appendingPathComponent(tarball).path])
        let script = """
            import { connect } from "warren-client";
            const url = process.argv[2], room = "room.pkg" + Date.now();
            const alice = connect({ url, user: "pkgalice", transports: ["websocket"] });
            const bob = connect({ url, user: "pkgbob", transports: ["polling"] });
            let deliver;
            const got = new Promise((resolve) => { deliver = resolve; });
            await alice.subscribe(room, {}, (env) => deliver(env));
            const id = await bob.publish(room, "hello from the package");
            const env = await got;
            console.log(env.id === id && env.from === "pkgbob" ? "chatted" : "wrong message " + JSON.stringify(env));
            alice.close(); bob.close();
            """
        try script.write(to: app.appendingPathComponent("chat.mjs"), atomically: true, encoding: .utf8)
        let output = try await run(["node", "--experimental-websocket", app.appendingPathComponent("chat.mjs").path,
                                    "http://127.0.0.1:\(warren.port)"])
        #expect(output.contains("chatted"), "\(output)")
    }

    private func run(browser: String?) async throws {
        // Token mode with no leeway: the 4401 case's token expires two seconds in. The store on
        // (its own file and queue): live subscriptions recover through it.
        let (store, remove) = try await StoreTests.makeDatabase(.sqlite)
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let warren = try await WarrenInstance.start(["WARREN_AUTH_MODE": "token", "WARREN_AUTH_SECRET": Self.secret,
                                                     "WARREN_AUTH_LEEWAY": "0", "WARREN_STORE_ENABLED": "true",
                                                     "WARREN_STORE_URL": store, "WARREN_STORE_QUEUE": queue])
        defer {
            warren.process.terminate()
            Task {
                await remove()
                try? await StoreTests.deleteQueue(queue)
            }
        }
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

import ArgumentParser
import Foundation
import WarrenClient
import struct WarrenCore.RouteKey

/// `warren chat --user alice --to bob`: a terminal chat on ``WarrenClient`` — try Warren from a
/// shell. Lines typed are published to the conversation; the conversation's history (when the
/// store is on) and then its messages as they come are printed, one per line:
/// `12:01:07 bob: hi`. Messages on the user's other conversations are printed with their route.
/// Status goes to stderr. It ends at end of input (after the last line was acknowledged: exit
/// status 1 if Warren refused any line) or on SIGINT.
///
/// This file imports the client library, and of WarrenCore only `RouteKey` (to check `--to`,
/// `--user` and `--device` before connecting): WarrenCore has types of the same names.
struct Chat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Chat from the terminal: lines you type go to --to, its messages are printed.")

    @Option(help: "Warren's http(s) base URL.") var url: String = "http://127.0.0.1:8080"
    @Option(help: "Who you are (auth.mode = none); with --token, the token's sub unless given (a server whose auth.user_claim is another claim).") var user: String?
    @Option(help: "A token (auth.mode = token); also WARREN_TOKEN. `warren token --user alice` mints one.") var token: String?
    @Option(help: "A user (the 1:1 conversation with them) or a route (room.lobby, a.b.c).") var to: String
    @Option(help: "Your device: its own inbox, so the terminal does not take your browser's messages.") var device: String = "terminal"
    @Option(help: "How many stored messages to show first.") var history: Int = 20

    func validate() throws {
        guard user != nil || token != nil || ProcessInfo.processInfo.environment["WARREN_TOKEN"] != nil else {
            throw ValidationError("give --user (auth.mode = none) or --token / WARREN_TOKEN (auth.mode = token)")
        }
        guard URL(string: url)?.host != nil else { throw ValidationError("--url must be an http(s) URL, e.g. http://127.0.0.1:8080") }
        guard history >= 0 else { throw ValidationError("--history must be 0 or more") }
        do { _ = try RouteKey(to) } catch { throw ValidationError("--to must be a user or a route: \(error)") }
        if let user, !RouteKey.isValidWord(user) { throw ValidationError("--user must be \(RouteKey.wordRule)") }
        guard RouteKey.isValidWord(device) else { throw ValidationError("--device must be \(RouteKey.wordRule)") }
    }

    func run() async throws {
        let token = token ?? ProcessInfo.processInfo.environment["WARREN_TOKEN"]
        let me = user ?? Self.subject(of: token ?? "") ?? "me"
        // One word: a user, the 1:1 conversation's route is both names in order. Else a route.
        let isUser = !to.contains(".")
        let route = isUser ? [me, to].sorted().joined(separator: ".") : to
        let client = await WarrenClient.connect(.init(url: URL(string: url)!, token: token, user: token == nil ? user : nil, device: device))
        let transcript = Transcript(me: me, route: route)
        let states = Task {
            var opened = false
            for await state in client.states {
                if case .open = state { opened = true }
                Self.status(Self.describe(state, me: me, url: url, opened: opened))
            }
        }
        defer { states.cancel() }
        do {
            try await client.waitUntilOpen()
        } catch {
            // Closed before it ever opened: Warren refused the credentials.
            Self.status("cannot connect: \(error)")
            throw ExitCode.failure
        }
        // Live rooms; the user's inbox for conversations (every device its own queue).
        let subscription: Subscription
        do {
            subscription = isUser || !route.hasPrefix("room.")
                ? try await client.subscribe("#.\(me).#", mode: .inbox)
                : try await client.subscribe(route, presence: true)
        } catch {
            Self.status("cannot subscribe: \(error)")
            throw ExitCode.failure
        }
        if history > 0, let page = try? await client.history(route, limit: history) {
            for envelope in page.messages { await transcript.show(envelope) }
        }
        if !isUser, route.hasPrefix("room."), let here = try? await client.presence(route) {
            Self.status("in \(route): \(here.joined(separator: ", "))")
        }
        let incoming = Task {
            for await delivery in subscription { await transcript.show(delivery.envelope) }
        }
        Self.status("type a line and press enter to send it to \(route); end with Ctrl-D")
        var counter = 0
        var unsent = 0
        for await line in Self.standardInputLines() where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            counter += 1
            let cid = "chat-\(ProcessInfo.processInfo.processIdentifier)-\(counter)"
            await transcript.sending(cid)
            do {
                _ = try await client.publish(route, .string(line), cid: cid)
            } catch {
                // The line as typed, cut short: a pasted page refused as too large is not echoed whole.
                Self.status("not sent (\(error)): \(line.count > 80 ? line.prefix(79) + "…" : line)")
                unsent += 1
            }
        }
        incoming.cancel()
        await client.close()
        // A script piping lines in learns that some did not go.
        if unsent > 0 {
            Self.status("\(unsent) line\(unsent == 1 ? " was" : "s were") not sent")
            throw ExitCode.failure
        }
    }

    /// Prints what arrives once each, skipping the echo of this terminal's own lines.
    actor Transcript {
        let me: String
        let route: String
        private var shown: Set<String> = []
        private var mine: Set<String> = []
        private let time: DateFormatter = {
            let f = DateFormatter()
            f.dateFormat = "HH:mm:ss"
            return f
        }()

        init(me: String, route: String) {
            self.me = me
            self.route = route
        }

        func sending(_ cid: String) { mine.insert(cid) }

        func show(_ envelope: Envelope) {
            guard shown.insert(envelope.id).inserted else { return }
            if envelope.from == me, let cid = envelope.cid, mine.remove(cid) != nil { return }
            let when = time.string(from: Date(timeIntervalSince1970: Double(envelope.ts) / 1000))
            let on = envelope.route == route ? "" : " [\(envelope.route)]"
            let line: String
            switch envelope.type {
            case "presence":
                // Someone else arriving or going (docs/protocol.md); this terminal's own join is the status line.
                guard let user = envelope.body["user"]?.stringValue, user == envelope.from, user != me else { return }
                line = "* \(user) \(envelope.body["state"]?.stringValue == "join" ? "joined" : "left")"
            case "typing":
                return
            default:
                // A string body, or the {"text": …} the demo page and many clients send.
                line = "\(envelope.from): \(envelope.body.stringValue ?? envelope.body["text"]?.stringValue ?? Self.json(envelope.body))"
            }
            FileHandle.standardOutput.write(Data("\(when)\(on) \(line)\n".utf8))
        }

        private static func json(_ body: JSONValue) -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return (try? encoder.encode(body)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
        }
    }

    /// Standard input's lines, read on a thread of their own (reading blocks).
    static func standardInputLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            Thread.detachNewThread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
        }
    }

    /// A state as a status line; `opened`: the chat was connected before (a retry is then a connection lost, else Warren not reached yet).
    static func describe(_ state: ClientState, me: String, url: String, opened: Bool) -> String {
        switch state {
        case .connecting(nil): "connecting…"
        case .connecting(let wait?):
            "\(opened ? "connection lost" : "cannot reach Warren at \(url)"); trying again in "
                + "\(String(format: "%.1f", Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18)) s"
        case .open(.webSocket): "connected as \(me) (WebSocket)"
        case .open(.polling): "connected as \(me) (long-polling)"
        case .closed: "closed"
        }
    }

    static func status(_ text: String) {
        FileHandle.standardError.write(Data("warren chat: \(text)\n".utf8))
    }

    /// The `sub` claim of a JWT, to name the user (Warren checks the token; this only labels).
    static func subject(of token: String) -> String? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        guard let data = Data(base64Encoded: payload),
              let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return claims["sub"] as? String
    }
}

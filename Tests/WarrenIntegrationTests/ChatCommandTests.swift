import AMQPClient
import Foundation
import TestSupport
import NIOCore
import Testing
import WarrenCore

/// Issue 17: `warren chat`, the terminal chat on the Swift client, run as a person would (the
/// built executable, lines on its standard input), talking with a WebSocket client and a plain
/// AMQP service both ways.
@Suite("warren chat", .serialized)
struct ChatCommandTests {
    @Test func aTerminalChatTalksWithAWebSocketClientAndAnAMQPService() async throws {
        let warren = try await WarrenInstance.start()
        let alice = uniqueUser("alice"), bob = uniqueUser("bob")
        let route = [alice, bob].sorted().joined(separator: ".")
        let b = try await warren.socket(bob)
        try await b.subscribe("s1", "#.\(bob).#", mode: "inbox")
        let service = try await AMQPObserver.bound(to: warren.exchange, pattern: "#.\(bob).#")
        let chat = try WarrenProcess(["chat", "--url", "http://127.0.0.1:\(warren.port)", "--user", alice, "--to", bob], input: true)
        #expect(await chat.waitForLog("type a line", timeout: .seconds(30)), "the chat did not connect:\n\(chat.log)")

        // From the terminal: to bob's socket and to the AMQP service, stamped as alice's.
        chat.type("hello from the terminal")
        let atBob = try #require(try await b.next(op: "msg").env)
        #expect(atBob["from"]?.stringValue == alice && atBob["route"]?.stringValue == route && atBob["via"]?.stringValue == "ws")
        #expect(atBob["body"] == .string("hello from the terminal"))
        let id = try #require(atBob["id"]?.stringValue)
        try await b.send(#"{"op":"ack","ids":["\#(id)"]}"#)
        let atService = try #require(await service.messages.next(timeout: .seconds(10)))
        #expect(atService.properties.messageID == id)

        // And back: from bob's socket and from the service, printed in the terminal.
        _ = try await b.request(#"{"op":"pub","route":"\#(route)","body":"hi terminal","cid":"b1"}"#, expect: "puback")
        #expect(await chat.waitForLog("\(bob): hi terminal", timeout: .seconds(20)), "bob's answer is not in the terminal:\n\(chat.log)")
        try await service.channel.publish("from a service", exchange: warren.exchange, routingKey: route,
                                          properties: BasicProperties(contentType: "text/plain", appID: "billing"))
        #expect(await chat.waitForLog("billing: from a service", timeout: .seconds(20)), "the service's message is not in the terminal:\n\(chat.log)")
        // Its own line is not echoed back to the terminal.
        #expect(WarrenProcess.count(of: "hello from the terminal", in: chat.log) == 0)

        // A line too large to publish is refused with its code, and not echoed back whole.
        chat.type(String(repeating: "x", count: 70_000))
        #expect(await chat.waitForLog("not sent (too_large", timeout: .seconds(20)), "the refusal is not in the terminal:\n\(chat.log.suffix(2_000))")
        let refusal = chat.log.split(separator: "\n").first { $0.contains("not sent") } ?? ""
        #expect(refusal.count < 300, "the refused line was echoed whole: \(refusal.count) characters")

        // End of input: the chat leaves, saying that a line was not sent, with exit status 1 (a
        // script piping lines in learns it; until 2026-11-29 the status was 0 all the same).
        chat.endInput()
        #expect(await chat.waitForExit() == 1, "the chat did not end at end of input, or with 0:\n\(chat.log)")
        #expect(chat.log.contains("1 line was not sent"), "\(chat.log.suffix(500))")
        await b.close()
        await service.close()
        await warren.stop()
    }

    /// A chat that cannot reach Warren says so, naming the URL, and keeps trying (it used to say
    /// "connection lost" of a connection it never had).
    @Test func aChatThatCannotReachWarrenSaysSo() async throws {
        let url = "http://127.0.0.1:\(WarrenProcess.freePort())"
        let chat = try WarrenProcess(["chat", "--url", url, "--user", uniqueUser("alice"), "--to", "bob"], input: true)
        defer { chat.terminate() }
        #expect(await chat.waitForLog("cannot reach Warren at \(url); trying again in", timeout: .seconds(20)), "\(chat.log)")
        #expect(!chat.log.contains("connection lost"), "\(chat.log)")
    }

    /// A token Warren refuses ends the chat with the reason, not a bare "closed".
    @Test func aRefusedTokenEndsTheChatWithTheReason() async throws {
        let warren = try await WarrenInstance.start(["WARREN_AUTH_MODE": "token", "WARREN_AUTH_SECRET": "chat-test-secret-0123456789abcdefghij"])
        let chat = try WarrenProcess(["chat", "--url", "http://127.0.0.1:\(warren.port)", "--token", "not.a.token", "--to", "bob"], input: true)
        #expect(await chat.waitForExit(timeout: .seconds(30)) == 1, "\(chat.log)")
        #expect(chat.log.contains("cannot connect: unauthorized"), "\(chat.log)")
        await warren.stop()
    }

    /// In a room: others' arrivals and departures as lines of their own (not presence JSON), a
    /// `{"text": …}` body (the demo page's) as its text.
    @Test func aRoomShowsWhoComesAndGoesAndTextBodies() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob")
        let room = "room.chat\(UUID().uuidString.prefix(6).lowercased())"
        let chat = try WarrenProcess(["chat", "--url", "http://127.0.0.1:\(warren.port)", "--user", alice, "--to", room], input: true)
        defer { chat.endInput() }
        #expect(await chat.waitForLog("type a line", timeout: .seconds(30)), "the chat did not connect:\n\(chat.log)")
        let b = try await warren.socket(bob)
        _ = try await b.request(#"{"op":"sub","id":"r","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        #expect(await chat.waitForLog("* \(bob) joined", timeout: .seconds(20)), "\(chat.log)")
        _ = try await b.request(#"{"op":"pub","route":"\#(room)","body":{"text":"hi room"},"cid":"b1"}"#, expect: "puback")
        #expect(await chat.waitForLog("\(bob): hi room", timeout: .seconds(20)), "\(chat.log)")
        _ = await b.close()
        #expect(await chat.waitForLog("* \(bob) left", timeout: .seconds(20)), "\(chat.log)")
        #expect(!chat.log.contains("\"state\""), "presence printed as JSON:\n\(chat.log)")
        #expect(!chat.log.contains("* \(alice) joined"), "its own join:\n\(chat.log)")
    }
}

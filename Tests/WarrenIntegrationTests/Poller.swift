import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import WarrenCore

/// A polling client of one Warren node.
struct Poller {
    let port: Int
    let user: String
    let session: String
    /// The cursor of no answer yet, from the `201`.
    var firstCursor: String? = nil

    static func open(port: Int, user: String, subscriptions: String, device: String? = nil) async throws -> Poller {
        let deviceField = device.map { #","device":"\#($0)""# } ?? ""
        let r = try await HTTPTestClient.request(.POST, port: port, "/v1/poll?user=\(user)",
                                                 body: #"{"subscriptions":\#(subscriptions)\#(deviceField)}"#)
        guard r.status == 201, let session = r.json?["session"]?.stringValue else {
            throw SocketError(description: "POST /v1/poll answered \(r.status): \(r.body)")
        }
        return Poller(port: port, user: user, session: session, firstCursor: r.json?["cursor"]?.stringValue)
    }

    /// A new room (`room.<prefix><random>`), a poller (a new `alice`) with it as its live
    /// subscription `r`, and a WebSocket of a new user to publish to it: how the tests that
    /// publish to a polled room begin.
    static func onNewRoom(_ prefix: String, of warren: WarrenInstance) async throws
        -> (alice: String, room: String, poller: Poller, sender: TestSocket)
    {
        let alice = uniqueUser("alice")
        let room = "room.\(prefix)\(UUID().uuidString.prefix(6).lowercased())"
        let poller = try await open(port: warren.port, user: alice, subscriptions: #"[{"id":"r","pattern":"\#(room)"}]"#)
        return (alice, room, poller, try await warren.socket(uniqueUser("bob")))
    }

    /// One poll; returns the messages and the cursor.
    func poll(wait: Int = 0, max: Int? = nil, ack: String? = nil, on otherPort: Int? = nil) async throws -> (messages: [JSONValue], cursor: String) {
        var target = "/v1/poll/\(session)?user=\(user)&wait=\(wait)"
        if let max { target += "&max=\(max)" }
        if let ack { target += "&ack=\(ack)" }
        let r = try await HTTPTestClient.request(.GET, port: otherPort ?? port, target)
        guard r.status == 200, let json = r.json, let cursor = json["cursor"]?.stringValue else {
            throw SocketError(description: "GET poll answered \(r.status): \(r.body)")
        }
        return (json["messages"]?.arrayValue ?? [], cursor)
    }

    /// Polls (acking as it goes, at most 10 polls) until a message with the body `sentinel`
    /// came; returns every string body with its envelope's id, in order.
    func bodiesAndIDs(until sentinel: String) async throws -> [(body: String, id: String)] {
        var bodies: [(body: String, id: String)] = []
        var cursor: String?
        for _ in 0..<10 where !bodies.contains(where: { $0.body == sentinel }) {
            let (messages, next) = try await poll(wait: 5, ack: cursor)
            cursor = next
            bodies += messages.compactMap { m in
                guard let env = m["env"], let body = env["body"]?.stringValue, let id = env["id"]?.stringValue else { return nil }
                return (body, id)
            }
        }
        return bodies
    }

    func publish(_ body: String) async throws -> JSONValue {
        let r = try await HTTPTestClient.request(.POST, port: port, "/v1/messages?user=\(user)", body: body)
        guard r.status == 202, let json = r.json else { throw SocketError(description: "POST /v1/messages answered \(r.status): \(r.body)") }
        return json
    }
}

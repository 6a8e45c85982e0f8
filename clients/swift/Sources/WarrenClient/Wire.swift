import Foundation

/// The frames and HTTP bodies the client exchanges with Warren (docs/protocol.md).
enum Wire {
    struct Sub: Encodable {
        var op = "sub"
        let id: String
        let pattern: String
        let mode: String
        let presence: Bool?
        /// A live subscription's last envelope id: what it missed after it comes first.
        let since: String?
    }

    struct Unsub: Encodable {
        var op = "unsub"
        let id: String
    }

    struct Ack: Encodable {
        var op = "ack"
        let ids: [String]
    }

    /// A publish: the WebSocket frame (with `op`) and the `POST /v1/messages` body (without).
    struct Pub: Encodable, Sendable {
        var op: String? = "pub"
        let route: String?
        let routes: [String]?
        let type: String
        let body: JSONValue
        let cid: String
        let headers: [String: String]?
        let transient: Bool?
    }

    /// Whatever Warren sends on the WebSocket.
    struct ServerFrame: Decodable {
        let op: String
        let id: String?
        let sub: String?
        let env: Envelope?
        let redelivered: Bool?
        let cid: String?
        let ids: [String]?
        let code: String?
        let message: String?
        let ref: String?
        /// `subscribed`: where a live subscription starts, and how its `since` went.
        let at: String?
        let recovered: Bool?
        let reason: String?
    }

    struct PollSubscription: Encodable {
        let id: String
        let pattern: String
        let mode: String
        let presence: Bool?
        let since: String?
    }

    /// How a poll session subscription's `since` went.
    struct Recovered: Decodable {
        let recovered: Bool
        let reason: String?
    }

    struct PollCreate: Encodable {
        let subscriptions: [PollSubscription]
        let device: String
    }

    struct PollSession: Decodable {
        let session: String
        /// The cursor of no answer yet (a Warren since 2026-11-29): the first poll acks it.
        let cursor: String?
        /// Where each live subscription starts, and how each `since` went.
        let at: [String: String]?
        let recovered: [String: Recovered]?
    }

    struct PollAnswer: Decodable {
        struct Item: Decodable {
            let sub: String
            let env: Envelope
            let redelivered: Bool?
        }
        let messages: [Item]
        /// The session held more than this answer carries (Warren since 2026-11-28).
        var more: Bool?
        let cursor: String?

        /// Answers of one session in the order its node made them, when their cursors say it:
        /// Warren's cursor is `<node>.<number>`, numbered per answer on the node. A drain's first
        /// poll can reach Warren before the long-poll still in flight does (another connection,
        /// another event loop): the drain's answer then holds the older messages, and handing the
        /// long-poll's on first put a later message before earlier ones (seen once, in a parallel
        /// local run of the move test, a room at ~600 messages a second). Cursors of other forms,
        /// or of several nodes: as given.
        static func inOrderMade(_ answers: [PollAnswer]) -> [PollAnswer] {
            var numbered: [(number: UInt64, index: Int)] = []
            var node: Substring?
            for (index, answer) in answers.enumerated() {
                guard let cursor = answer.cursor, let dot = cursor.lastIndex(of: "."),
                      let number = UInt64(cursor[cursor.index(after: dot)...]) else { return answers }
                if let node, node != cursor[..<dot] { return answers }
                node = cursor[..<dot]
                numbered.append((number, index))
            }
            return numbered.sorted { ($0.number, $0.index) < ($1.number, $1.index) }.map { answers[$0.index] }
        }
    }

    struct Cursor: Encodable {
        let cursor: String
    }

    struct Published: Decodable {
        let id: String?
        let ids: [String]?
    }

    struct ErrorBody: Decodable {
        struct Inner: Decodable {
            let code: String
            let message: String
            let ref: String?
        }
        let error: Inner
    }

    struct Read: Encodable {
        let route: String
        let id: String
    }

    struct Users: Decodable {
        let users: [String]
    }

    struct ConversationList: Decodable {
        let conversations: [Conversation]
    }

    static func encode(_ value: some Encodable) -> String {
        String(decoding: (try? JSONEncoder().encode(value)) ?? Data("{}".utf8), as: UTF8.self)
    }
}

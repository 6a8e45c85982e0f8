import Foundation

/// The frames and HTTP bodies the client exchanges with Warren (DESIGN §4, §5, §10, §11).
enum Wire {
    struct Sub: Encodable {
        var op = "sub"
        let id: String
        let pattern: String
        let mode: String
        let presence: Bool?
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
    }

    struct PollSubscription: Encodable {
        let id: String
        let pattern: String
        let mode: String
        let presence: Bool?
    }

    struct PollCreate: Encodable {
        let subscriptions: [PollSubscription]
        let device: String
    }

    struct PollSession: Decodable {
        let session: String
        /// The cursor of no answer yet (a Warren since 2026-11-29): the first poll acks it.
        let cursor: String?
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

import Logging
import NIOCore
import WarrenCore

/// The Server-Sent Events door (docs/protocol.md, "Server-Sent Events"): `GET /v1/sse?pattern=…`
/// streams `text/event-stream`, one event per envelope, to an `EventSource` (or anything that
/// reads the format). One per server: who may open a stream (``ConnectionAdmission``), what a
/// stream asks for (``Ask``), and how an admitted connection's pipeline becomes a stream.
///
/// The same session as every door (``ClientSession``): live subscriptions only (an inbox needs
/// acks, which a stream cannot send: WebSocket or polling for those), the user's rules, the
/// limits, the slow-consumer rule; publishing stays `POST /v1/messages`. `Last-Event-ID` (or
/// `since`) is the subscriptions' `since`: a reconnecting `EventSource` misses nothing the
/// store kept.
final class EventStreamDoor: Sendable {
    typealias Admitted = ConnectionAdmission.Admitted

    /// What a stream asks for, checked before its `200`: a refusal is an HTTP error then, which
    /// an `EventSource` does not retry (after the `200` it would reconnect for ever).
    struct Ask: Sendable, Equatable {
        var patterns: [TopicPattern]
        var since: String?
    }

    let admission: ConnectionAdmission
    let sockets: OpenSockets
    let logger: Logger
    /// A comment every this many seconds keeps proxies from timing the stream out.
    let heartbeatSeconds: Int
    /// How long an `EventSource` waits before reconnecting (the stream's `retry:`).
    static let retryMilliseconds = 1000

    init(link: BrokerLink, authenticator: Authenticator, sockets: OpenSockets, heartbeatSeconds: Int, logger: Logger) {
        admission = ConnectionAdmission(link: link, authenticator: authenticator, frontend: .sse)
        self.sockets = sockets
        self.heartbeatSeconds = heartbeatSeconds
        self.logger = logger
    }

    /// The patterns (`pattern`, repeated or comma-separated) and `since` (`Last-Event-ID`, else
    /// `since` in the query) of a stream request, checked against the user's rules.
    static func ask(query: Query, lastEventID: String?, rules: AccessRules, maxSubscriptions: Int) -> Result<Ask, ProtocolError> {
        var patterns: [TopicPattern] = []
        for text in query.items.all("pattern").flatMap({ $0.split(separator: ",").map(String.init) }) {
            let pattern: TopicPattern
            do { pattern = try TopicPattern(text) } catch { return .failure(ProtocolError(.badRoute, error.description, ref: text)) }
            guard rules.canSubscribe(pattern) else {
                return .failure(ProtocolError(.forbidden, "not allowed to subscribe to \(pattern.value)", ref: text))
            }
            if !patterns.contains(pattern) { patterns.append(pattern) }
        }
        guard !patterns.isEmpty else { return .failure(ProtocolError(.badFrame, "a stream needs at least one pattern", ref: nil)) }
        guard patterns.count <= maxSubscriptions else {
            return .failure(ProtocolError(.rateLimited, "at most \(maxSubscriptions) patterns per stream", ref: nil))
        }
        let since = lastEventID.flatMap { $0.isEmpty ? nil : $0 } ?? query.items["since"]
        if let since, UUIDv7Generator.canonical(since) == nil {
            return .failure(ProtocolError(.badFrame, "Last-Event-ID (since) must be a message id", ref: nil))
        }
        return .success(Ask(patterns: patterns, since: since))
    }

    /// The stream's head and first bytes. `extra`: the request's CORS lines.
    static func head(extra: String?) -> ByteBuffer {
        var out = ByteBuffer()
        out.writeStaticString("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-store\r\n")
        out.writeStaticString("x-accel-buffering: no\r\nconnection: close\r\n")
        if let extra {
            out.writeString(extra)
            out.writeStaticString("\r\n")
        }
        out.writeStaticString("\r\n")
        var preamble = EventStreamEncoding.preamble(retryMilliseconds: retryMilliseconds)
        out.writeBuffer(&preamble)
        return out
    }

    /// Makes an admitted connection's pipeline a stream's, after its head was written.
    func install(_ admitted: Admitted, ask: Ask, on pipeline: ChannelPipeline.SynchronousOperations) throws {
        try pipeline.addHandler(EventStreamHandler(door: self, admitted: admitted, ask: ask))
    }
}

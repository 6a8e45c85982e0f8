import Foundation
import WarrenCore

/// What an `EventSource` does, spoken on a raw connection: `GET /v1/sse`, with `Last-Event-ID`
/// when reconnecting, and the `text/event-stream` it answers read event by event.
final class EventStreamClient: Sendable {
    struct Event: Sendable {
        var id: String?
        var name: String?
        var data: String
        var json: JSONValue? { try? JSONParser.parse(data) }
    }

    let connection: RawConnection

    private init(connection: RawConnection) { self.connection = connection }

    static func open(port: Int, query: String, lastEventID: String? = nil) async throws -> EventStreamClient {
        let connection = try await RawConnection.open(port: port)
        var request = "GET /v1/sse?\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        if let lastEventID { request += "Last-Event-ID: \(lastEventID)\r\n" }
        try await connection.send(request + "\r\n")
        return EventStreamClient(connection: connection)
    }

    /// The answer's status line, once its head is in.
    func status(timeout: Duration = .seconds(10)) async -> String? {
        guard await connection.received("\r\n\r\n", within: timeout) else { return nil }
        return connection.text.split(separator: "\r\n").first.map(String.init)
    }

    /// Every whole event so far (comments and the `retry:` field left out), in order.
    var events: [Event] {
        let text = connection.text
        guard let body = text.range(of: "\r\n\r\n")?.upperBound else { return [] }
        var events: [Event] = []
        var blocks = text[body...].components(separatedBy: "\n\n")
        blocks.removeLast()  // not ended yet (or empty)
        for block in blocks {
            var event = Event(data: "")
            var lines: [String] = []
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("id: ") { event.id = String(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { event.name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { lines.append(String(line.dropFirst(6))) }
            }
            guard !lines.isEmpty else { continue }
            event.data = lines.joined(separator: "\n")
            events.append(event)
        }
        return events
    }

    /// The envelopes received so far (unnamed events).
    var envelopes: [Event] { events.filter { $0.name == nil } }

    /// Waits until `done` holds for the events so far.
    func events(until done: ([Event]) -> Bool, timeout: Duration = .seconds(30)) async throws -> [Event] {
        let end = ContinuousClock.now + timeout
        while true {
            let now = events
            if done(now) { return now }
            guard ContinuousClock.now < end else {
                throw SocketError(description: "the stream did not get there within \(timeout): \(now.suffix(3).map(\.data))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func drop() async { await connection.drop() }
}

import Foundation
import WarrenCore

/// A poller that sends all its polls on one keep-alive connection, each the same request but
/// for its `ack`, as a browser's or a library's HTTP stack does: Warren takes such repeats
/// without parsing them again (`RepeatedPoll`).
actor KeepAlivePoller {
    let poller: Poller
    private let connection: RawConnection
    /// Responses read so far.
    private var answered = 0

    init(_ poller: Poller) async throws {
        self.poller = poller
        connection = try await RawConnection.open(port: poller.port)
    }

    /// One poll; returns the messages and the cursor.
    func poll(wait: Int = 0, ack: String? = nil) async throws -> (messages: [JSONValue], cursor: String) {
        var target = "/v1/poll/\(poller.session)?user=\(poller.user)&wait=\(wait)"
        if let ack { target += "&ack=\(ack)" }
        try await connection.send("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answered += 1
        let deadline = ContinuousClock.now + .seconds(wait + 15)
        while Self.responses(connection.text).count < answered {
            guard ContinuousClock.now < deadline else { throw SocketError(description: "no answer to poll \(answered): \(connection.text)") }
            try await Task.sleep(for: .milliseconds(20))
        }
        let (status, body) = Self.responses(connection.text)[answered - 1]
        guard status == 200, let json = try? JSONParser.parse(body), let cursor = json["cursor"]?.stringValue else {
            throw SocketError(description: "GET poll answered \(status): \(body)")
        }
        return (json["messages"]?.arrayValue ?? [], cursor)
    }

    func close() async { await connection.drop() }

    /// The complete responses in `text`, in order.
    static func responses(_ text: String) -> [(status: Int, body: String)] {
        var out: [(Int, String)] = []
        var rest = Substring(text)
        while let end = rest.range(of: "\r\n\r\n") {
            let head = rest[..<end.lowerBound]
            let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
            let length = head.split(separator: "\r\n").lazy
                .compactMap { line -> Int? in
                    let parts = line.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                    return Int(parts[1].trimmingCharacters(in: .whitespaces))
                }.first ?? 0
            let body = rest[end.upperBound...].utf8
            guard body.count >= length else { break }
            let bodyEnd = body.index(body.startIndex, offsetBy: length)
            out.append((status, String(Substring(body[..<bodyEnd]))))
            rest = Substring(body[bodyEnd...])
        }
        return out
    }
}

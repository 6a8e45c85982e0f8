import AMQPClient
import Foundation
import NIOCore

/// One message's bytes, built once for every poller: its answer item
/// (`{"sub":"s","env":{…}}`, sized like Warren's) and the whole single-message answer.
final class FloorMessage: Sendable {
    let item: [UInt8]
    let response: [UInt8]
    let sequence: Int

    init(_ message: AMQPMessage, sequence: Int) {
        let body = String(buffer: message.body)
        let ts = Int(Date().timeIntervalSince1970 * 1000)
        let id = UUID().uuidString.lowercased()
        item = Array(
            #"{"sub":"s","env":{"v":1,"id":"\#(id)","route":"\#(message.routingKey)","type":"text","from":"bench","via":"amqp","ts":\#(ts),"body":"\#(body)"}}"#
                .utf8)
        self.sequence = sequence
        response = Self.answer(items: [item], sequence: sequence)
    }

    /// The HTTP/1.1 answer carrying `items`.
    static func answer(items: [[UInt8]], sequence: Int) -> [UInt8] {
        var body = Array(#"{"messages":["#.utf8)
        for (k, item) in items.enumerated() {
            if k > 0 { body.append(UInt8(ascii: ",")) }
            body += item
        }
        body += Array(#"],"cursor":"floor.\#(sequence)"}"#.utf8)
        return Array("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: \(body.count)\r\n\r\n".utf8) + body
    }

    /// The answer to `POST /v1/poll`.
    static let created: [UInt8] = {
        let body = #"{"session":"floor","expires_in":120,"cursor":"floor.0"}"#
        return Array("HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    }()

    static let ready = Array("HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nok\n".utf8)
    static let notFound = Array("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".utf8)
}

// warren-echo-bot: a chat participant that speaks plain AMQP only (with Warren's
// AMQP module), to show that services join Warren conversations without Warren.
//
// It binds a queue with `#.<name>.#` on the chat exchange, so it receives every
// conversation it is part of (alice.bot, alice.bob.bot, ...), and answers in the
// same conversation: it echoes text, and when a message mentions "bill" it sends
// an `app:bill` envelope carrying a made-up ticket.
//
//   swift run warren-echo-bot [amqp-url] [exchange] [name]
import AMQPClient
import Foundation
import Logging
import NIOCore

let arguments = CommandLine.arguments
let url = arguments.count > 1 ? arguments[1] : "amqp://guest:guest@127.0.0.1:5672/%2f"
let exchange = arguments.count > 2 ? arguments[2] : "chat"
let name = arguments.count > 3 ? arguments[3] : "bot"

var logger = Logger(label: "echo-bot")
logger.logLevel = .info

let connection = try await AMQPConnection.connect(configuration: try AMQPConfiguration(url: url), logger: logger)
let channel = try await connection.openChannel()
try await channel.exchangeDeclare(exchange, type: "topic", durable: true)
let queue = "warren.bot.\(name)"
try await channel.queueDeclare(queue, durable: true)
try await channel.queueBind(queue: queue, exchange: exchange, routingKey: "#.\(name).#")
try await channel.basicQos(prefetchCount: 50)
try await channel.confirmSelect()
let deliveries = try await channel.consume(queue: queue)
logger.info("echo bot ready", metadata: ["name": "\(name)", "exchange": "\(exchange)"])
var tickets = 1000

for try await message in deliveries {
    defer { channel.ack(message.deliveryTag) }
    let data = Data(message.body.readableBytesView)
    guard let envelope = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
          envelope["from"] as? String != name else { continue }   // never answer ourselves
    let from = envelope["from"] as? String ?? "someone"
    let text: String
    if let s = envelope["body"] as? String {
        text = s
    } else if let b = envelope["body"], let json = try? JSONSerialization.data(withJSONObject: b, options: [.fragmentsAllowed]) {
        text = String(decoding: json, as: UTF8.self)
    } else {
        text = ""
    }

    var reply: [String: Any] = ["v": 1, "from": name, "type": "text", "body": "echo to \(from): \(text)"]
    if text.lowercased().contains("bill") {
        tickets += 1
        reply["type"] = "app:bill"
        reply["body"] = ["ticket": "T-\(tickets)", "amount": 42.50, "currency": "EUR", "for": from]
    }
    let body = try JSONSerialization.data(withJSONObject: reply)
    do {
        // A message id of our own (any UUID), so every copy — each node's live fan-out, each
        // inbox, the conversation store — carries the same id and clients can de-duplicate.
        try await channel.publish(ByteBuffer(bytes: body), exchange: exchange, routingKey: message.routingKey,
                                  properties: BasicProperties(contentType: "application/json", deliveryMode: 2,
                                                              messageID: UUID().uuidString.lowercased(), appID: name))
    } catch {
        logger.error("reply failed", metadata: ["error": "\(error)"])
    }
}

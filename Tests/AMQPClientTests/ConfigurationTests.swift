@testable import AMQPClient
import NIOCore
import Testing

@Suite struct URLTests {
    @Test func aClusterOfURLs() throws {
        let c = try AMQPConfiguration(urls: ["amqp://u:p@a:5672/v", "amqp://u:p@b:5673/v", "amqp://u:p@[::1]/v"])
        #expect(c.endpoints == [.init(host: "a", port: 5672), .init(host: "b", port: 5673), .init(host: "::1", port: 5672)])
        #expect(c.redactedURLs == ["amqp://u:***@a:5672/v", "amqp://u:***@b:5673/v", "amqp://u:***@[::1]:5672/v"])
        #expect(throws: AMQPError.self) { try AMQPConfiguration(urls: ["amqp://u:p@a/v", "amqp://u:other@b/v"]) }
        #expect(throws: AMQPError.self) { try AMQPConfiguration(urls: ["amqp://u:p@a/v", "amqps://u:p@b/v"]) }
        #expect(throws: AMQPError.self) { try AMQPConfiguration(urls: ["amqp://u:p@a/v", "amqp://u:p@b/w"]) }
        #expect(throws: AMQPError.self) { try AMQPConfiguration(urls: []) }
    }

    @Test func fullURL() throws {
        let c = try AMQPConfiguration(url: "amqp://us%40er:p%3Ass@broker.example:5673/my%2fvhost?heartbeat=5&connection_timeout=2500")
        #expect(c.username == "us@er" && c.password == "p:ss")
        #expect(c.host == "broker.example" && c.port == 5673)
        #expect(c.vhost == "my/vhost")
        #expect(c.heartbeat == 5)
        #expect(c.connectTimeout == .milliseconds(2500))
        #expect(!c.tls)
    }

    @Test(arguments: [("amqp://localhost", "/"), ("amqp://localhost/", "/"), ("amqp://localhost/%2f", "/"), ("amqp://h/dev", "dev")])
    func vhosts(url: String, vhost: String) throws {
        #expect(try AMQPConfiguration(url: url).vhost == vhost)
    }

    @Test func defaultsAndTLS() throws {
        #expect(try AMQPConfiguration(url: "amqp://").host == "127.0.0.1", "amqp:// alone means every default")
        let c = try AMQPConfiguration(url: "amqps://h")
        #expect(c.tls && c.port == 5671 && c.username == "guest")
        let v6 = try AMQPConfiguration(url: "amqp://[::1]:5672")
        #expect(v6.host == "::1")
        #expect(c.redactedDescription == "amqps://guest:***@h:5671")
    }

    @Test(arguments: ["http://h", "amqp://h:0", "amqp://h:99999", "amqp://h:x", "amqp://u:%zz@h", "amqp://h?heartbeat=-1",
                      "amqp://[::1", "amqp://h?frame_max=100", "amqp://h o"])
    func invalid(url: String) {
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: url) }
    }
}

@Suite struct RecoveryPolicyTests {
    @Test func backoffIsCappedAndJittered() {
        let p = RecoveryPolicy(initialDelay: .milliseconds(100), maxDelay: .seconds(5), multiplier: 2)
        var rng = SystemRandomNumberGenerator()
        for attempt in 0..<40 {
            let cap = min(5_000_000_000.0, 100_000_000.0 * Double(1 << min(attempt, 30)))
            for _ in 0..<20 {
                let d = Double(p.delay(attempt: attempt, using: &rng).nanoseconds)
                #expect(d >= cap / 2 - 1 && d <= cap + 1)
            }
        }
        let samples = Set((0..<50).map { _ in p.delay(attempt: 3).nanoseconds })
        #expect(samples.count > 1, "jitter spreads the retries")
    }
}

@Suite struct RecordedTopologyTests {
    final class NullSink: AMQPDeliverySink {
        func deliver(_ message: AMQPMessage) {}
        func finish(_ error: AMQPError?) {}
    }

    @Test func serverNamedQueueRenameFollowsBindingsAndConsumers() {
        var t = RecordedTopology()
        t.recordExchange(ExchangeDeclare(exchange: "chat"))
        t.recordExchange(ExchangeDeclare(exchange: "other", passive: true))
        t.recordQueue(QueueDeclare(queue: "", exclusive: true), name: "amq.gen-1")
        t.recordBinding(queue: "amq.gen-1", exchange: "chat", routingKey: "#.a.#", arguments: [:])
        t.recordBinding(queue: "amq.gen-1", exchange: "chat", routingKey: "#.a.#", arguments: [:])
        t.recordConsumer(.init(channel: 1, consume: BasicConsume(queue: "amq.gen-1", consumerTag: "c"), sink: NullSink()))
        #expect(t.orderedExchanges.map(\.declare.exchange) == ["chat"], "passive declares are not recorded")
        #expect(t.bindings.count == 1)
        #expect(t.orderedQueues.first?.serverNamed == true)
        t.renameQueue("amq.gen-1", to: "amq.gen-2")
        #expect(t.orderedQueues.map(\.name) == ["amq.gen-2"])
        #expect(t.bindings.first?.queue == "amq.gen-2")
        #expect(t.orderedConsumers.first?.consume.queue == "amq.gen-2")
        t.deleteQueue("amq.gen-2")
        #expect(t.bindings.isEmpty)
        #expect(t.deleteConsumers(onChannel: 1).count == 1)
        #expect(t.orderedConsumers.isEmpty)
    }

    /// Replayed in the order first recorded, whatever was removed or recorded again meanwhile;
    /// many records cost each change O(1) (10,000 bindings and consumers here).
    @Test func recordsReplayInTheOrderFirstRecorded() {
        var t = RecordedTopology()
        t.recordQueue(QueueDeclare(queue: "q"), name: "q")
        for i in 0..<10_000 {
            t.recordBinding(queue: "q", exchange: "chat", routingKey: "k\(i)", arguments: [:])
            t.recordConsumer(.init(channel: UInt16(1 + i % 3), consume: BasicConsume(queue: "q", consumerTag: "c\(i)"), sink: NullSink()))
        }
        for i in stride(from: 0, to: 10_000, by: 2) {
            t.deleteBinding(queue: "q", exchange: "chat", routingKey: "k\(i)", arguments: [:])
            t.deleteConsumer("c\(i)")
        }
        t.recordBinding(queue: "q", exchange: "chat", routingKey: "k1", arguments: [:])  // again: keeps its place
        t.recordBinding(queue: "q", exchange: "chat", routingKey: "k0", arguments: [:])  // removed before: now last
        let odd = stride(from: 1, to: 10_000, by: 2)
        #expect(t.bindings.map(\.routingKey) == odd.map { "k\($0)" } + ["k0"])
        #expect(t.orderedConsumers.map(\.consume.consumerTag) == odd.map { "c\($0)" })
        let onTwo = t.deleteConsumers(onChannel: 2).map(\.consume.consumerTag)
        #expect(onTwo == odd.filter { 1 + $0 % 3 == 2 }.map { "c\($0)" })
        #expect(t.orderedConsumers.map(\.consume.consumerTag) == odd.filter { 1 + $0 % 3 != 2 }.map { "c\($0)" })
    }
}

/// Restoring a connection on a cluster whose node died: a queue declared again a moment ago and
/// then not found by its own bind or consume must make the whole restore retry, not be skipped.
@Suite struct RestoreRetryTests {
    static func closed(_ code: UInt16) -> AMQPError {
        .channelClosed(CloseArguments(replyCode: code, replyText: "NOT_FOUND - no queue 'q' in vhost '/'", classID: 60, methodID: 20))
    }

    @Test func aQueueDeclaredAgainAndThenNotFoundRetriesTheRestore() {
        let error = AMQPConnection.retryIfRedeclaredQueueVanished(Self.closed(ReplyCode.notFound), queue: "warren.live.n1",
                                                                  declared: ["warren.live.n1", "warren.presence.n1"])
        #expect(AMQPConnection.isLinkFailure(error), "a link failure: the attempt is retried after backoff")
        guard case .connectionLost(let text) = error else { Issue.record("got \(error)"); return }
        #expect(text.contains("warren.live.n1"))
    }

    @Test func otherFailuresAreSkippedAsBefore() {
        // A queue this client never declared (a durable inbox the broker keeps): skipped, as before.
        let undeclared = AMQPConnection.retryIfRedeclaredQueueVanished(Self.closed(ReplyCode.notFound), queue: "warren.inbox.a.b",
                                                                       declared: ["warren.live.n1"])
        #expect(undeclared == Self.closed(ReplyCode.notFound))
        #expect(!AMQPConnection.isLinkFailure(undeclared))
        // Another channel error on a declared queue (406 PRECONDITION_FAILED): skipped.
        let other = AMQPConnection.retryIfRedeclaredQueueVanished(Self.closed(406), queue: "warren.live.n1", declared: ["warren.live.n1"])
        #expect(other == Self.closed(406))
        #expect(!AMQPConnection.isLinkFailure(other))
    }

    @Test func onlyA405ChannelCloseIsAHeldQueue() {
        let locked = Self.closed(ReplyCode.resourceLocked)
        #expect(locked.isResourceLocked)
        #expect(AMQPConnection.isLinkFailure(locked), "waited out: the broker may not yet have noticed our old connection is dead")
        #expect(!Self.closed(ReplyCode.notFound).isResourceLocked)
        #expect(!AMQPError.connectionLost("reset").isResourceLocked)
        #expect(!AMQPError.connectionClosedByServer(CloseArguments(replyCode: ReplyCode.resourceLocked, replyText: "x")).isResourceLocked,
                "a connection close with the same code is not a held queue")
    }
}

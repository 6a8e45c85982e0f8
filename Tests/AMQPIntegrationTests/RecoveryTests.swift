import AMQPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@Suite("Recovery", .serialized)
struct RecoveryTests {
    /// `rabbitmqctl close_all_connections` drops every client; ours comes back with its
    /// exclusive queue, binding and consumer, and deliveries resume.
    @Test func closeAllConnectionsIsRecovered() async throws {
        let connection = try await Broker.connect()
        defer { Task { await connection.close() } }
        let events = connection.events()
        let channel = try await connection.openChannel()
        let exchange = Broker.unique("rx")
        let queue = Broker.unique("rq")
        try await channel.exchangeDeclare(exchange, type: "topic", durable: false, autoDelete: false)
        try await channel.queueDeclare(queue, exclusive: true)   // dies with the connection: must be re-declared
        try await channel.queueBind(queue: queue, exchange: exchange, routingKey: "#.alice.#")
        try await channel.basicQos(prefetchCount: 10)
        try await channel.confirmSelect()
        let consumer = try await channel.consume(queue: queue)
        let received = Collector<String>()
        let reader = Task {
            for try await m in consumer {
                await received.append(String(buffer: m.body))
                channel.ack(m.deliveryTag)
            }
        }

        try await channel.publish("before", exchange: exchange, routingKey: "alice.bob")
        try await received.wait { $0.contains("before") }

        // A publish in flight at the drop: it must end as confirmed or failed, never hang or lie.
        let inFlight = Task { () -> Result<Void, Error> in
            do {
                try await channel.publish("in-flight", exchange: exchange, routingKey: "alice.bob")
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try Broker.ctl("close_all_connections", "test: close all")
        let inFlightOutcome = try await within(.seconds(30)) { await inFlight.value }

        try await connection.waitFor(.seconds(30), events) { if case .connected(let epoch) = $0 { return epoch >= 2 } else { return false } }
        #expect(connection.state == .connected)

        try await channel.publish("after", exchange: exchange, routingKey: "alice.bob")
        try await received.wait { $0.contains("after") }
        if case .success = inFlightOutcome {
            // Confirmed before the drop: it must have been delivered (before or after recovery).
            try await received.wait { $0.contains("in-flight") }
        }
        reader.cancel()
        try await channel.queueDelete(queue)
        try await channel.exchangeDelete(exchange)
    }

    /// Acking a delivery tag from before the reconnect is a no-op, not a channel error.
    @Test func staleDeliveryTagsAreIgnored() async throws {
        let connection = try await Broker.connect()
        defer { Task { await connection.close() } }
        let events = connection.events()
        let channel = try await connection.openChannel()
        let queue = Broker.unique("stale")
        try await channel.queueDeclare(queue, durable: false, exclusive: true)
        try await channel.confirmSelect()
        try await channel.publish("x", exchange: "", routingKey: queue)
        let m = try #require(try await channel.get(queue: queue))
        try Broker.ctl("close_all_connections", "test: stale tags")
        try await connection.waitFor(.seconds(30), events) { if case .connected(let e) = $0 { return e >= 2 } else { return false } }
        channel.ack(m.deliveryTag)          // epoch 1 tag on an epoch 2 link: ignored
        try await channel.basicQos(prefetchCount: 3)   // the channel is still healthy
        #expect(channel.closeReason == nil)
    }

    /// A broker that stops answering (a proxy that stops forwarding) is declared dead within
    /// two heartbeat intervals, and the connection recovers through the proxy.
    @Test func silentPeerIsDeclaredDeadAndRecovered() async throws {
        let proxy = try await TCPProxy.start(to: 5672)
        var config = try Broker.configuration(heartbeat: 1)
        config.port = proxy.port
        config.connectionName = "test:silent-peer"
        let connection = try await AMQPConnection.connect(configuration: config)
        defer { Task { await connection.close(); await proxy.stop() } }
        let events = connection.events()
        let channel = try await connection.openChannel()
        let queue = Broker.unique("silent")
        try await channel.queueDeclare(queue, exclusive: true)

        let frozenAt = ContinuousClock.now
        #expect(proxy.freezeExisting() == 1)
        let deadAfter = NIOLockedValueBox<Duration?>(nil)
        try await connection.waitFor(.seconds(20), events) { event in
            if case .recovering(let error) = event {
                deadAfter.withLockedValue { $0 = ContinuousClock.now - frozenAt }
                return error == .heartbeatTimeout
            }
            return false
        }
        let elapsed = try #require(deadAfter.withLockedValue { $0 })
        print("silent peer declared dead after \(elapsed) (heartbeat 1 s)")
        try await connection.waitFor(.seconds(30), events) { if case .connected(let e) = $0 { return e >= 2 } else { return false } }
        #expect(proxy.connections >= 2)
        try await channel.publish("back", exchange: "", routingKey: queue)
        let m = try await within(.seconds(5)) { try await channel.get(queue: queue, noAck: true) }
        #expect(m.map { String(buffer: $0.body) } == "back")
    }

    /// A peer that accepts the connection and closes it at once (a broker refusing the login
    /// closes within a millisecond of the connect): a typed error every time. The handler was
    /// looked up in the pipeline after the connect, and once it had gone with the closed
    /// connection the lookup's `ChannelPipelineError.notFound` came out instead (the CI saw it
    /// once, for a wrong password).
    @Test func aPeerThatClosesAtOnceFailsWithATypedError() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { $0.close() }
            .bind(host: "127.0.0.1", port: 0).get()
        var config = try Broker.configuration()
        config.port = try #require(server.localAddress?.port)
        for _ in 0..<50 {
            await #expect(throws: AMQPError.self) { _ = try await AMQPConnection.connect(configuration: config) }
        }
        try await server.close()
    }

    @Test func unreachableBrokerFailsWithATypedError() async throws {
        var config = try Broker.configuration()
        config.port = 1   // nothing listens there
        await #expect(throws: AMQPError.self) { _ = try await AMQPConnection.connect(configuration: config) }
        var wrongPassword = try Broker.configuration()
        wrongPassword.password = "definitely-wrong"
        do {
            _ = try await AMQPConnection.connect(configuration: wrongPassword)
            Issue.record("bad credentials must fail")
        } catch let error as AMQPError {
            guard case .authenticationFailed = error else { Issue.record("got \(error)"); return }
        }
    }
}


import AMQPClient
import Foundation
import NIOCore
import Testing

/// `amqps://` against the local broker's TLS listener (port 5671), whose certificate
/// scripts/rabbitmq.sh made with openssl from a test CA (for localhost and 127.0.0.1).
@Suite("TLS to the broker", .serialized)
struct TLSTests {
    static let tlsDirectory = (ProcessInfo.processInfo.environment["WARREN_RABBITMQ_DIR"] ?? "/tmp/warren-rabbitmq") + "/tls"
    static let caFile = tlsDirectory + "/ca.pem"

    static func configuration(host: String = "127.0.0.1", ca: String? = caFile, serverName: String? = nil) throws -> AMQPConfiguration {
        var c = try AMQPConfiguration(url: "amqps://guest:guest@\(host)/%2f?connection_timeout=5000")
        c.tlsOptions = .init(caFile: ca, serverName: serverName)
        c.recovery = RecoveryPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(200))
        return c
    }

    @Test func amqpsVerifiedAgainstTheTestCA() async throws {
        #expect(try Self.configuration().port == 5671)
        for host in ["127.0.0.1", "localhost"] { // the IP address and the DNS name on the certificate
            let connection = try await AMQPConnection.connect(configuration: try Self.configuration(host: host))
            let channel = try await connection.openChannel()
            let queue = Broker.unique("tls")
            try await channel.queueDeclare(queue, exclusive: true)
            try await channel.confirmSelect()
            try await channel.publish("over TLS", exchange: "", routingKey: queue)
            let message = try #require(try await channel.get(queue: queue, noAck: true))
            #expect(String(buffer: message.body) == "over TLS")
            await connection.close()
        }
    }

    @Test func anUntrustedCertificateOrAWrongPortIsRefused() async throws {
        // The system trust store does not know the test CA.
        await #expect(throws: AMQPError.self) {
            _ = try await AMQPConnection.connect(configuration: try Self.configuration(ca: nil))
        }
        // (Names: swift-nio-ssl accepts a certificate that matches the server name *or* the
        // address connected to; the test certificate names 127.0.0.1, so a wrong-name case
        // cannot be built against this broker without a second certificate.)
        // Plain AMQP bytes to the TLS port, or TLS to the plain port, fail cleanly.
        var plain = try AMQPConfiguration(url: "amqp://guest:guest@127.0.0.1:5671/%2f?connection_timeout=3000")
        plain.recovery = RecoveryPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(200))
        await #expect(throws: (any Error).self) { _ = try await AMQPConnection.connect(configuration: plain) }
        var wrongPort = try Self.configuration()
        wrongPort.port = 5672
        await #expect(throws: (any Error).self) { _ = try await AMQPConnection.connect(configuration: wrongPort) }
        // A client certificate without its key is a configuration error.
        var half = try Self.configuration()
        half.tlsOptions.certificateFile = Self.caFile
        await #expect(throws: AMQPError.self) { _ = try await AMQPConnection.connect(configuration: half) }
    }
}

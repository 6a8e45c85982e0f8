@testable import AMQPClient
import NIOCore
import Testing
import TestSupport

/// Random, truncated and corrupted input must end in a frame, "need more bytes" or a
/// typed error: never a crash, never a loop that does not end.
@Suite struct FrameFuzzTests {
    /// Decodes until the input is used up or an error; counts the outcomes.
    static func run(_ bytes: [UInt8]) -> (frames: Int, error: AMQPProtocolError?) {
        var buffer = ByteBuffer(bytes: bytes)
        var frames = 0
        var steps = 0
        while true {
            steps += 1
            precondition(steps < 100_000, "decoder did not make progress")
            do {
                guard try AMQPFrame.decode(from: &buffer, maxFrameSize: 8192) != nil else { return (frames, nil) }
                frames += 1
            } catch {
                return (frames, error)
            }
        }
    }

    static func validWire() throws -> [UInt8] {
        var frames = sampleMethods.map { AMQPFrame.method(channel: 1, $0) }
        frames += AMQPFrame.content(channel: 1, method: .basicDeliver(BasicDeliver(consumerTag: "c", deliveryTag: 1, redelivered: false,
                                                                                    exchange: "chat", routingKey: "a.b")),
                                    properties: BasicProperties(contentType: "application/json", headers: ["from": "alice"]),
                                    body: ByteBuffer(string: String(repeating: "x", count: 9000)), frameMax: 4096)
        frames.append(.heartbeat)
        return Array(try encode(frames).readableBytesView)
    }

    @Test func randomBytes() {
        var rng = SplitMix(seed: 1)
        var errors = 0
        for _ in 0..<3000 {
            let count = Int.random(in: 0..<300, using: &rng)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if Self.run(bytes).error != nil { errors += 1 }
        }
        #expect(errors > 2000, "random bytes are almost never a valid frame")
    }

    @Test func corruptedValidFrames() throws {
        let wire = try Self.validWire()
        var rng = SplitMix(seed: 2)
        var outcomes = (clean: 0, errors: 0)
        for _ in 0..<3000 {
            var bytes = wire
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            if Self.run(bytes).error == nil { outcomes.clean += 1 } else { outcomes.errors += 1 }
        }
        #expect(outcomes.errors > 0)
        #expect(outcomes.clean + outcomes.errors == 3000)
    }

    /// A frame whose size field is honest but whose payload is cut short inside its fields.
    @Test func truncatedPayloadsAreTypedErrors() throws {
        var checked = 0
        for method in sampleMethods {
            var full = ByteBuffer()
            try method.encode(into: &full)
            guard full.readableBytes > 4 else { continue }
            for cut in 4..<full.readableBytes {
                var payload = full.getSlice(at: 0, length: cut)!
                var frame = ByteBuffer()
                frame.writeInteger(UInt8(1)); frame.writeInteger(UInt16(1)); frame.writeInteger(UInt32(payload.readableBytes))
                frame.writeBuffer(&payload); frame.writeInteger(UInt8(0xCE))
                let (frames, error) = Self.run(Array(frame.readableBytesView))
                // A cut that lands exactly on a field boundary of a method whose later fields are
                // optional does not exist in AMQP: every cut must be an error.
                #expect(frames == 0 && error != nil, "cut \(cut) of \(method.ids)")
                checked += 1
            }
        }
        #expect(checked > 500)
    }

    @Test func truncatedStreamIsNeedMoreNotError() throws {
        let wire = try Self.validWire()
        var rng = SplitMix(seed: 3)
        for _ in 0..<500 {
            let cut = Int.random(in: 0..<wire.count, using: &rng)
            let (_, error) = Self.run(Array(wire[..<cut]))
            #expect(error == nil, "a stream cut short must wait for more bytes, not fail")
        }
    }
}

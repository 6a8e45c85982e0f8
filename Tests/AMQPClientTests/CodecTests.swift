@testable import AMQPClient
import NIOCore
import Testing

/// Every method the client sends or receives, with non-default arguments.
let sampleMethods: [AMQPMethod] = [
    .connectionStart(ConnectionStart(serverProperties: ["product": "RabbitMQ", "capabilities": .table(["publisher_confirms": true])])),
    .connectionStartOk(ConnectionStartOk(clientProperties: ["product": "x"], mechanism: "PLAIN", response: [0, 97, 0, 98], locale: "en_US")),
    .connectionSecure(challenge: [1, 2]),
    .connectionSecureOk(response: [3]),
    .connectionTune(ConnectionTune(channelMax: 2047, frameMax: 131_072, heartbeat: 60)),
    .connectionTuneOk(ConnectionTune(channelMax: 10, frameMax: 4096, heartbeat: 5)),
    .connectionOpen(vhost: "/"),
    .connectionOpenOk,
    .connectionClose(CloseArguments(replyCode: 320, replyText: "CONNECTION_FORCED - bye", classID: 0, methodID: 0)),
    .connectionCloseOk,
    .connectionBlocked(reason: "low on memory"),
    .connectionUnblocked,
    .connectionUpdateSecret(newSecret: [1, 2, 3], reason: "refresh"),
    .connectionUpdateSecretOk,
    .channelOpen, .channelOpenOk,
    .channelFlow(active: true), .channelFlowOk(active: false),
    .channelClose(CloseArguments(replyCode: 404, replyText: "NOT_FOUND - no queue 'x'", classID: 50, methodID: 10)),
    .channelCloseOk,
    .exchangeDeclare(ExchangeDeclare(exchange: "chat", type: "topic", passive: true, durable: true, autoDelete: true,
                                     internal: true, noWait: true, arguments: ["alternate-exchange": "ae"])),
    .exchangeDeclareOk,
    .exchangeDelete(exchange: "chat", ifUnused: true, noWait: false), .exchangeDeleteOk,
    .exchangeBind(ExchangeBind(destination: "d", source: "s", routingKey: "a.#", noWait: true, arguments: ["k": 1])),
    .exchangeBindOk,
    .exchangeUnbind(ExchangeBind(destination: "d", source: "s", routingKey: "a.#")), .exchangeUnbindOk,
    .queueDeclare(QueueDeclare(queue: "warren.inbox.alice.phone", passive: false, durable: true, exclusive: false, autoDelete: true,
                               noWait: false, arguments: ["x-expires": .int32(604_800_000), "x-max-length": .int64(10_000),
                                                          "x-overflow": "reject-publish", "x-queue-type": "quorum"])),
    .queueDeclareOk(QueueDeclareOk(queue: "amq.gen-xyz", messageCount: 7, consumerCount: 2)),
    .queueBind(QueueBind(queue: "q", exchange: "chat", routingKey: "#.alice.#", noWait: true, arguments: ["a": "b"])),
    .queueBindOk,
    .queuePurge(queue: "q", noWait: true), .queuePurgeOk(messageCount: 12),
    .queueDelete(queue: "q", ifUnused: true, ifEmpty: true, noWait: false), .queueDeleteOk(messageCount: 3),
    .queueUnbind(QueueBind(queue: "q", exchange: "chat", routingKey: "#.alice.#", arguments: [:])), .queueUnbindOk,
    .basicQos(prefetchSize: 0, prefetchCount: 100, global: false), .basicQosOk,
    .basicConsume(BasicConsume(queue: "q", consumerTag: "c1", noLocal: true, noAck: true, exclusive: true, noWait: false,
                               arguments: ["x-priority": .int32(5)])),
    .basicConsumeOk(consumerTag: "c1"),
    .basicCancel(consumerTag: "c1", noWait: true), .basicCancelOk(consumerTag: "c1"),
    .basicPublish(BasicPublish(exchange: "chat", routingKey: "alice.bob", mandatory: true, immediate: false)),
    .basicReturn(BasicReturn(replyCode: 312, replyText: "NO_ROUTE", exchange: "chat", routingKey: "nobody")),
    .basicDeliver(BasicDeliver(consumerTag: "c1", deliveryTag: 1 << 40, redelivered: true, exchange: "chat", routingKey: "a.b")),
    .basicGet(queue: "q", noAck: true),
    .basicGetOk(BasicGetOk(deliveryTag: 9, redelivered: false, exchange: "", routingKey: "q", messageCount: 4)),
    .basicGetEmpty,
    .basicAck(deliveryTag: 5, multiple: true),
    .basicReject(deliveryTag: 6, requeue: true),
    .basicRecoverAsync(requeue: true), .basicRecover(requeue: false), .basicRecoverOk,
    .basicNack(deliveryTag: 7, multiple: true, requeue: false),
    .confirmSelect(noWait: false), .confirmSelectOk,
    .txSelect, .txSelectOk, .txCommit, .txCommitOk, .txRollback, .txRollbackOk,
]

func encode(_ frames: [AMQPFrame]) throws -> ByteBuffer {
    var buffer = ByteBuffer()
    for f in frames { try f.encode(into: &buffer) }
    return buffer
}

func decodeAll(_ buffer: ByteBuffer, maxFrameSize: UInt32 = 131_072) throws(AMQPProtocolError) -> [AMQPFrame] {
    var b = buffer
    var frames: [AMQPFrame] = []
    while let f = try AMQPFrame.decode(from: &b, maxFrameSize: maxFrameSize) { frames.append(f) }
    return frames
}

@Suite struct MethodCodecTests {
    @Test(arguments: sampleMethods)
    func methodRoundTrip(_ method: AMQPMethod) throws {
        let frame = AMQPFrame.method(channel: 3, method)
        let decoded = try decodeAll(encode([frame]))
        #expect(decoded == [frame])
    }

    @Test func everyMethodIDIsDistinct() {
        let ids = sampleMethods.map { "\($0.ids.classID).\($0.ids.methodID)" }
        #expect(Set(ids).count == ids.count)
    }

    @Test func knownWireBytesForBasicAck() throws {
        let bytes = try encode([.method(channel: 1, .basicAck(deliveryTag: 2, multiple: true))])
        #expect(Array(bytes.readableBytesView) == [1, 0, 1, 0, 0, 0, 13, 0, 60, 0, 80, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0xCE])
    }

    @Test func heartbeatWireForm() throws {
        let bytes = try encode([.heartbeat])
        #expect(Array(bytes.readableBytesView) == [8, 0, 0, 0, 0, 0, 0, 0xCE])
    }

    @Test func contentHeaderWithEveryPropertyRoundTrips() throws {
        let props = BasicProperties(contentType: "application/json", contentEncoding: "utf-8", headers: ["from": "alice", "n": .int32(3)],
                                    deliveryMode: 2, priority: 5, correlationID: "corr", replyTo: "amq.rabbitmq.reply-to",
                                    expiration: "0", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e", timestamp: 1_763_726_400,
                                    type: "text", userID: "guest", appID: "warren", clusterID: "")
        let frame = AMQPFrame.header(channel: 1, ContentHeader(bodySize: 12, properties: props))
        #expect(try decodeAll(encode([frame])) == [frame])
        let empty = AMQPFrame.header(channel: 1, ContentHeader(bodySize: 0, properties: BasicProperties()))
        #expect(try decodeAll(encode([empty])) == [empty])
    }
}

@Suite struct FieldTableTests {
    @Test func everyTypeRoundTrips() throws {
        let table: FieldTable = [
            "t": .bool(true), "b": .int8(-3), "B": .uint8(250), "s": .int16(-300), "u": .uint16(60000),
            "I": .int32(-70000), "i": .uint32(4_000_000_000), "l": .int64(-1 << 40), "f": .float(1.5), "d": .double(-2.25),
            "D": .decimal(scale: 2, value: 12345), "S": .string("héllo"), "x": .bytes([0, 255, 1]),
            "A": .array([.int32(1), .string("two"), .array([.bool(false)]), .table(["k": .void])]),
            "T": .timestamp(1_763_726_400), "F": .table(["nested": .table(["deep": .int64(1)])]), "V": .void,
        ]
        var buffer = ByteBuffer()
        try buffer.writeFieldTable(table)
        let decoded = try buffer.readFieldTable()
        #expect(decoded == table)
        #expect(buffer.readableBytes == 0)
    }

    /// RabbitMQ's errata: `s` is a signed 16-bit, `l` a signed 64-bit, `x` a byte array.
    @Test func rabbitErrataTypeOctets() throws {
        var raw = ByteBuffer()
        var body = ByteBuffer()
        body.writeInteger(UInt8(1)); body.writeString("a"); body.writeInteger(UInt8(ascii: "s")); body.writeInteger(Int16(-2))
        body.writeInteger(UInt8(1)); body.writeString("b"); body.writeInteger(UInt8(ascii: "l")); body.writeInteger(Int64(-5))
        body.writeInteger(UInt8(1)); body.writeString("c"); body.writeInteger(UInt8(ascii: "x")); body.writeInteger(UInt32(2)); body.writeBytes([7, 8])
        raw.writeInteger(UInt32(body.readableBytes))
        raw.writeImmutableBuffer(body)
        let t = try raw.readFieldTable()
        #expect(t == ["a": .int16(-2), "b": .int64(-5), "c": .bytes([7, 8])])
    }

    @Test func unknownTypeIsTypedError() {
        var raw = ByteBuffer()
        raw.writeInteger(UInt32(3)); raw.writeInteger(UInt8(1)); raw.writeString("a"); raw.writeInteger(UInt8(ascii: "Z"))
        #expect(throws: AMQPProtocolError.unknownFieldType(UInt8(ascii: "Z"))) { try raw.readFieldTable() }
    }

    @Test func tableLengthBeyondBufferIsTruncated() {
        var raw = ByteBuffer()
        raw.writeInteger(UInt32(1000)); raw.writeBytes([1, 2, 3])
        #expect(throws: AMQPProtocolError.truncated("field table")) { try raw.readFieldTable() }
    }

    @Test func deepNestingIsRejected() throws {
        var value = FieldValue.void
        for _ in 0..<100 { value = .table(["n": value]) }
        var buffer = ByteBuffer()
        try buffer.writeFieldTable(["root": value])
        #expect(throws: AMQPProtocolError.nestingTooDeep) { try buffer.readFieldTable() }
    }

    @Test func shortStringOver255IsRejectedOnWrite() {
        var buffer = ByteBuffer()
        #expect(throws: AMQPProtocolError.shortStringTooLong(300)) { try buffer.writeShortString(String(repeating: "a", count: 300)) }
    }
}

@Suite struct FramingTests {
    @Test func partialFramesWaitForMoreBytes() throws {
        let bytes = try encode([.method(channel: 1, .basicQos(prefetchSize: 0, prefetchCount: 10, global: false))])
        for cut in 0..<bytes.readableBytes {
            var partial = bytes.getSlice(at: 0, length: cut)!
            #expect(try AMQPFrame.decode(from: &partial, maxFrameSize: 4096) == nil)
            #expect(partial.readableBytes == cut, "a partial frame must not be consumed")
        }
    }

    @Test func oversizedFrameIsRejectedBeforeItsPayloadArrives() {
        var b = ByteBuffer()
        b.writeInteger(UInt8(3)); b.writeInteger(UInt16(1)); b.writeInteger(UInt32.max)
        #expect(throws: AMQPProtocolError.frameTooLarge(size: UInt32.max, max: 4096)) {
            try AMQPFrame.decode(from: &b, maxFrameSize: 4096)
        }
        #expect(AMQPProtocolError.frameTooLarge(size: 1, max: 1).replyCode == 501)
    }

    @Test func badFrameEndIsFrameError() throws {
        var bytes = try encode([.heartbeat])
        bytes.setInteger(UInt8(0xCD), at: 7)
        #expect(throws: AMQPProtocolError.badFrameEnd(0xCD)) { try decodeAll(bytes) }
    }

    @Test func unknownFrameType() {
        var b = ByteBuffer(bytes: [9, 0, 0, 0, 0, 0, 0, 0xCE])
        #expect(throws: AMQPProtocolError.unknownFrameType(9)) { try AMQPFrame.decode(from: &b, maxFrameSize: 4096) }
    }

    @Test func heartbeatOnAChannelIsFrameError() {
        var b = ByteBuffer(bytes: [8, 0, 1, 0, 0, 0, 0, 0xCE])
        #expect(throws: AMQPProtocolError.self) { try AMQPFrame.decode(from: &b, maxFrameSize: 4096) }
    }

    @Test func methodWithTrailingBytesIsSyntaxError() {
        var b = ByteBuffer(bytes: [1, 0, 1, 0, 0, 0, 5, 0, 20, 0, 41, 9, 0xCE]) // channel.close-ok + 1 stray byte
        #expect(throws: AMQPProtocolError.trailingBytes("method 20.41")) { try AMQPFrame.decode(from: &b, maxFrameSize: 4096) }
        #expect(AMQPProtocolError.trailingBytes("").replyCode == 502)
    }

    @Test func unknownMethodIsNotImplemented() {
        var b = ByteBuffer(bytes: [1, 0, 1, 0, 0, 0, 4, 0, 99, 0, 1, 0xCE])
        #expect(throws: AMQPProtocolError.unknownMethod(classID: 99, methodID: 1)) { try AMQPFrame.decode(from: &b, maxFrameSize: 4096) }
        #expect(AMQPProtocolError.unknownMethod(classID: 0, methodID: 0).replyCode == 540)
    }

    @Test func bodySplitAtFrameMaxMinusEight() throws {
        let body = ByteBuffer(bytes: (0..<10_000).map { UInt8($0 % 251) })
        let frames = AMQPFrame.content(channel: 2, method: .basicPublish(BasicPublish(exchange: "x", routingKey: "k")),
                                       properties: BasicProperties(), body: body, frameMax: 4096)
        #expect(frames.count == 2 + 3)
        var sizes: [Int] = []
        for case .body(_, let chunk) in frames { sizes.append(chunk.readableBytes) }
        #expect(sizes == [4088, 4088, 1824])
        let wire = try encode(frames)
        let decoded = try decodeAll(wire, maxFrameSize: 4096)
        #expect(decoded == frames)
    }

    @Test func emptyBodyHasNoBodyFrames() {
        let frames = AMQPFrame.content(channel: 1, method: .basicPublish(BasicPublish(exchange: "", routingKey: "q")),
                                       properties: BasicProperties(), body: ByteBuffer(), frameMax: 4096)
        #expect(frames.count == 2)
    }
}

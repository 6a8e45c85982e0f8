import NIOCore

extension AMQPMethod {
    /// The (class, method) ids this method has on the wire.
    public var ids: (classID: UInt16, methodID: UInt16) {
        switch self {
        case .connectionStart: return (10, 10)
        case .connectionStartOk: return (10, 11)
        case .connectionSecure: return (10, 20)
        case .connectionSecureOk: return (10, 21)
        case .connectionTune: return (10, 30)
        case .connectionTuneOk: return (10, 31)
        case .connectionOpen: return (10, 40)
        case .connectionOpenOk: return (10, 41)
        case .connectionClose: return (10, 50)
        case .connectionCloseOk: return (10, 51)
        case .connectionBlocked: return (10, 60)
        case .connectionUnblocked: return (10, 61)
        case .connectionUpdateSecret: return (10, 70)
        case .connectionUpdateSecretOk: return (10, 71)
        case .channelOpen: return (20, 10)
        case .channelOpenOk: return (20, 11)
        case .channelFlow: return (20, 20)
        case .channelFlowOk: return (20, 21)
        case .channelClose: return (20, 40)
        case .channelCloseOk: return (20, 41)
        case .exchangeDeclare: return (40, 10)
        case .exchangeDeclareOk: return (40, 11)
        case .exchangeDelete: return (40, 20)
        case .exchangeDeleteOk: return (40, 21)
        case .exchangeBind: return (40, 30)
        case .exchangeBindOk: return (40, 31)
        case .exchangeUnbind: return (40, 40)
        case .exchangeUnbindOk: return (40, 51)
        case .queueDeclare: return (50, 10)
        case .queueDeclareOk: return (50, 11)
        case .queueBind: return (50, 20)
        case .queueBindOk: return (50, 21)
        case .queuePurge: return (50, 30)
        case .queuePurgeOk: return (50, 31)
        case .queueDelete: return (50, 40)
        case .queueDeleteOk: return (50, 41)
        case .queueUnbind: return (50, 50)
        case .queueUnbindOk: return (50, 51)
        case .basicQos: return (60, 10)
        case .basicQosOk: return (60, 11)
        case .basicConsume: return (60, 20)
        case .basicConsumeOk: return (60, 21)
        case .basicCancel: return (60, 30)
        case .basicCancelOk: return (60, 31)
        case .basicPublish: return (60, 40)
        case .basicReturn: return (60, 50)
        case .basicDeliver: return (60, 60)
        case .basicGet: return (60, 70)
        case .basicGetOk: return (60, 71)
        case .basicGetEmpty: return (60, 72)
        case .basicAck: return (60, 80)
        case .basicReject: return (60, 90)
        case .basicRecoverAsync: return (60, 100)
        case .basicRecover: return (60, 110)
        case .basicRecoverOk: return (60, 111)
        case .basicNack: return (60, 120)
        case .confirmSelect: return (85, 10)
        case .confirmSelectOk: return (85, 11)
        case .txSelect: return (90, 10)
        case .txSelectOk: return (90, 11)
        case .txCommit: return (90, 20)
        case .txCommitOk: return (90, 21)
        case .txRollback: return (90, 30)
        case .txRollbackOk: return (90, 31)
        }
    }

    /// Decodes a method frame payload. The whole payload must be consumed.
    public static func decode(from buffer: inout ByteBuffer) throws(AMQPProtocolError) -> AMQPMethod {
        let classID = try buffer.readAMQPInteger(UInt16.self, "class id")
        let methodID = try buffer.readAMQPInteger(UInt16.self, "method id")
        let method = try decodeArguments(classID: classID, methodID: methodID, from: &buffer)
        guard buffer.readableBytes == 0 else { throw .trailingBytes("method \(classID).\(methodID)") }
        return method
    }

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    private static func decodeArguments(classID: UInt16, methodID: UInt16, from b: inout ByteBuffer) throws(AMQPProtocolError) -> AMQPMethod {
        switch (classID, methodID) {
        case (10, 10):
            return .connectionStart(ConnectionStart(
                versionMajor: try b.readAMQPInteger(UInt8.self, "version-major"),
                versionMinor: try b.readAMQPInteger(UInt8.self, "version-minor"),
                serverProperties: try b.readFieldTable(),
                mechanisms: try b.readLongString("mechanisms"),
                locales: try b.readLongString("locales")))
        case (10, 11):
            return .connectionStartOk(ConnectionStartOk(
                clientProperties: try b.readFieldTable(),
                mechanism: try b.readShortString("mechanism"),
                response: Array(try b.readLongStringBytes("response").readableBytesView),
                locale: try b.readShortString("locale")))
        case (10, 20): return .connectionSecure(challenge: Array(try b.readLongStringBytes("challenge").readableBytesView))
        case (10, 21): return .connectionSecureOk(response: Array(try b.readLongStringBytes("response").readableBytesView))
        case (10, 30): return .connectionTune(try readTune(&b))
        case (10, 31): return .connectionTuneOk(try readTune(&b))
        case (10, 40):
            let vhost = try b.readShortString("virtual-host")
            _ = try b.readShortString("capabilities")
            _ = try b.readAMQPInteger(UInt8.self, "insist")
            return .connectionOpen(vhost: vhost)
        case (10, 41): _ = try b.readShortString("known-hosts"); return .connectionOpenOk
        case (10, 50): return .connectionClose(try readClose(&b))
        case (10, 51): return .connectionCloseOk
        case (10, 60): return .connectionBlocked(reason: try b.readShortString("reason"))
        case (10, 61): return .connectionUnblocked
        case (10, 70):
            return .connectionUpdateSecret(newSecret: Array(try b.readLongStringBytes("new-secret").readableBytesView),
                                           reason: try b.readShortString("reason"))
        case (10, 71): return .connectionUpdateSecretOk

        case (20, 10): _ = try b.readShortString("out-of-band"); return .channelOpen
        case (20, 11): _ = try b.readLongStringBytes("channel-id"); return .channelOpenOk
        case (20, 20): return .channelFlow(active: try b.readAMQPInteger(UInt8.self, "active").bit(0))
        case (20, 21): return .channelFlowOk(active: try b.readAMQPInteger(UInt8.self, "active").bit(0))
        case (20, 40): return .channelClose(try readClose(&b))
        case (20, 41): return .channelCloseOk

        case (40, 10):
            _ = try b.readAMQPInteger(UInt16.self, "ticket")
            let exchange = try b.readShortString("exchange")
            let type = try b.readShortString("type")
            let bits = try b.readAMQPInteger(UInt8.self, "flags")
            return .exchangeDeclare(ExchangeDeclare(
                exchange: exchange, type: type, passive: bits.bit(0), durable: bits.bit(1), autoDelete: bits.bit(2),
                internal: bits.bit(3), noWait: bits.bit(4), arguments: try b.readFieldTable()))
        case (40, 11): return .exchangeDeclareOk
        case (40, 20):
            _ = try b.readAMQPInteger(UInt16.self, "ticket")
            let exchange = try b.readShortString("exchange")
            let bits = try b.readAMQPInteger(UInt8.self, "flags")
            return .exchangeDelete(exchange: exchange, ifUnused: bits.bit(0), noWait: bits.bit(1))
        case (40, 21): return .exchangeDeleteOk
        case (40, 30): return .exchangeBind(try readExchangeBind(&b))
        case (40, 31): return .exchangeBindOk
        case (40, 40): return .exchangeUnbind(try readExchangeBind(&b))
        case (40, 51): return .exchangeUnbindOk

        case (50, 10):
            _ = try b.readAMQPInteger(UInt16.self, "ticket")
            let queue = try b.readShortString("queue")
            let bits = try b.readAMQPInteger(UInt8.self, "flags")
            return .queueDeclare(QueueDeclare(
                queue: queue, passive: bits.bit(0), durable: bits.bit(1), exclusive: bits.bit(2),
                autoDelete: bits.bit(3), noWait: bits.bit(4), arguments: try b.readFieldTable()))
        case (50, 11):
            return .queueDeclareOk(QueueDeclareOk(
                queue: try b.readShortString("queue"),
                messageCount: try b.readAMQPInteger(UInt32.self, "message-count"),
                consumerCount: try b.readAMQPInteger(UInt32.self, "consumer-count")))
        case (50, 20):
            _ = try b.readAMQPInteger(UInt16.self, "ticket")
            let queue = try b.readShortString("queue")
            let exchange = try b.readShortString("exchange")
            let key = try b.readShortString("routing-key")
            let bits = try b.readAMQPInteger(UInt8.self, "flags")
            return .queueBind(QueueBind(queue: queue, exchange: exchange, routingKey: key, noWait: bits.bit(0),
                                        arguments: try b.readFieldTable()))
        case (50, 21): return .queueBindOk
        case (50, 30):
            _ = try b.readAMQPInteger(UInt16.self, "ticket")
            let queue = try b.readShortString("queue")
            return .queuePurge(queue: queue, noWait: try b.readAMQPInteger(UInt8.self, "flags").bit(0))
        case (50, 31): return .queuePurgeOk(messageCount: try b.readAMQPInteger(UInt32.self, "message-count"))
        case (50, 40):
            _ = try b.readAMQPInteger(UInt16.self, "ticket")
            let queue = try b.readShortString("queue")
            let bits = try b.readAMQPInteger(UInt8.self, "flags")
            return .queueDelete(queue: queue, ifUnused: bits.bit(0), ifEmpty: bits.bit(1), noWait: bits.bit(2))
        case (50, 41): return .queueDeleteOk(messageCount: try b.readAMQPInteger(UInt32.self, "message-count"))
        case (50, 50):
            _ = try b.readAMQPInteger(UInt16.self, "ticket")
            let queue = try b.readShortString("queue")
            let exchange = try b.readShortString("exchange")
            let key = try b.readShortString("routing-key")
            return .queueUnbind(QueueBind(queue: queue, exchange: exchange, routingKey: key, arguments: try b.readFieldTable()))
        case (50, 51): return .queueUnbindOk

        case (60, 10):
            let size = try b.readAMQPInteger(UInt32.self, "prefetch-size")
            let count = try b.readAMQPInteger(UInt16.self, "prefetch-count")
            return .basicQos(prefetchSize: size, prefetchCount: count, global: try b.readAMQPInteger(UInt8.self, "global").bit(0))
        case (60, 11): return .basicQosOk
        case (60, 20):
            _ = try b.readAMQPInteger(UInt16.self, "ticket")
            let queue = try b.readShortString("queue")
            let tag = try b.readShortString("consumer-tag")
            let bits = try b.readAMQPInteger(UInt8.self, "flags")
            return .basicConsume(BasicConsume(queue: queue, consumerTag: tag, noLocal: bits.bit(0), noAck: bits.bit(1),
                                              exclusive: bits.bit(2), noWait: bits.bit(3), arguments: try b.readFieldTable()))
        case (60, 21): return .basicConsumeOk(consumerTag: try b.readShortString("consumer-tag"))
        case (60, 30):
            let tag = try b.readShortString("consumer-tag")
            return .basicCancel(consumerTag: tag, noWait: try b.readAMQPInteger(UInt8.self, "no-wait").bit(0))
        case (60, 31): return .basicCancelOk(consumerTag: try b.readShortString("consumer-tag"))
        case (60, 40):
            _ = try b.readAMQPInteger(UInt16.self, "ticket")
            let exchange = try b.readShortString("exchange")
            let key = try b.readShortString("routing-key")
            let bits = try b.readAMQPInteger(UInt8.self, "flags")
            return .basicPublish(BasicPublish(exchange: exchange, routingKey: key, mandatory: bits.bit(0), immediate: bits.bit(1)))
        case (60, 50):
            return .basicReturn(BasicReturn(
                replyCode: try b.readAMQPInteger(UInt16.self, "reply-code"),
                replyText: try b.readShortString("reply-text"),
                exchange: try b.readShortString("exchange"),
                routingKey: try b.readShortString("routing-key")))
        case (60, 60):
            let tag = try b.readShortString("consumer-tag")
            let deliveryTag = try b.readAMQPInteger(UInt64.self, "delivery-tag")
            let redelivered = try b.readAMQPInteger(UInt8.self, "redelivered").bit(0)
            return .basicDeliver(BasicDeliver(consumerTag: tag, deliveryTag: deliveryTag, redelivered: redelivered,
                                              exchange: try b.readShortString("exchange"),
                                              routingKey: try b.readShortString("routing-key")))
        case (60, 70):
            _ = try b.readAMQPInteger(UInt16.self, "ticket")
            let queue = try b.readShortString("queue")
            return .basicGet(queue: queue, noAck: try b.readAMQPInteger(UInt8.self, "no-ack").bit(0))
        case (60, 71):
            let deliveryTag = try b.readAMQPInteger(UInt64.self, "delivery-tag")
            let redelivered = try b.readAMQPInteger(UInt8.self, "redelivered").bit(0)
            return .basicGetOk(BasicGetOk(deliveryTag: deliveryTag, redelivered: redelivered,
                                          exchange: try b.readShortString("exchange"),
                                          routingKey: try b.readShortString("routing-key"),
                                          messageCount: try b.readAMQPInteger(UInt32.self, "message-count")))
        case (60, 72): _ = try b.readShortString("cluster-id"); return .basicGetEmpty
        case (60, 80):
            let tag = try b.readAMQPInteger(UInt64.self, "delivery-tag")
            return .basicAck(deliveryTag: tag, multiple: try b.readAMQPInteger(UInt8.self, "multiple").bit(0))
        case (60, 90):
            let tag = try b.readAMQPInteger(UInt64.self, "delivery-tag")
            return .basicReject(deliveryTag: tag, requeue: try b.readAMQPInteger(UInt8.self, "requeue").bit(0))
        case (60, 100): return .basicRecoverAsync(requeue: try b.readAMQPInteger(UInt8.self, "requeue").bit(0))
        case (60, 110): return .basicRecover(requeue: try b.readAMQPInteger(UInt8.self, "requeue").bit(0))
        case (60, 111): return .basicRecoverOk
        case (60, 120):
            let tag = try b.readAMQPInteger(UInt64.self, "delivery-tag")
            let bits = try b.readAMQPInteger(UInt8.self, "flags")
            return .basicNack(deliveryTag: tag, multiple: bits.bit(0), requeue: bits.bit(1))

        case (85, 10): return .confirmSelect(noWait: try b.readAMQPInteger(UInt8.self, "nowait").bit(0))
        case (85, 11): return .confirmSelectOk

        case (90, 10): return .txSelect
        case (90, 11): return .txSelectOk
        case (90, 20): return .txCommit
        case (90, 21): return .txCommitOk
        case (90, 30): return .txRollback
        case (90, 31): return .txRollbackOk
        default: throw .unknownMethod(classID: classID, methodID: methodID)
        }
    }

    private static func readTune(_ b: inout ByteBuffer) throws(AMQPProtocolError) -> ConnectionTune {
        ConnectionTune(channelMax: try b.readAMQPInteger(UInt16.self, "channel-max"),
                       frameMax: try b.readAMQPInteger(UInt32.self, "frame-max"),
                       heartbeat: try b.readAMQPInteger(UInt16.self, "heartbeat"))
    }

    private static func readClose(_ b: inout ByteBuffer) throws(AMQPProtocolError) -> CloseArguments {
        CloseArguments(replyCode: try b.readAMQPInteger(UInt16.self, "reply-code"),
                       replyText: try b.readShortString("reply-text"),
                       classID: try b.readAMQPInteger(UInt16.self, "class-id"),
                       methodID: try b.readAMQPInteger(UInt16.self, "method-id"))
    }

    private static func readExchangeBind(_ b: inout ByteBuffer) throws(AMQPProtocolError) -> ExchangeBind {
        _ = try b.readAMQPInteger(UInt16.self, "ticket")
        let destination = try b.readShortString("destination")
        let source = try b.readShortString("source")
        let key = try b.readShortString("routing-key")
        let noWait = try b.readAMQPInteger(UInt8.self, "no-wait").bit(0)
        return ExchangeBind(destination: destination, source: source, routingKey: key, noWait: noWait,
                            arguments: try b.readFieldTable())
    }

    /// Encodes class id, method id and arguments.
    public func encode(into b: inout ByteBuffer) throws(AMQPProtocolError) {
        let (classID, methodID) = self.ids
        b.writeInteger(classID)
        b.writeInteger(methodID)
        func bits(_ values: Bool...) -> UInt8 {
            var packer = BitPacker()
            for v in values { packer.append(v) }
            return packer.byte
        }
        switch self {
        case .connectionStart(let m):
            b.writeInteger(m.versionMajor); b.writeInteger(m.versionMinor)
            try b.writeFieldTable(m.serverProperties)
            b.writeLongString(m.mechanisms); b.writeLongString(m.locales)
        case .connectionStartOk(let m):
            try b.writeFieldTable(m.clientProperties)
            try b.writeShortString(m.mechanism)
            b.writeLongString(bytes: m.response)
            try b.writeShortString(m.locale)
        case .connectionSecure(let c): b.writeLongString(bytes: c)
        case .connectionSecureOk(let r): b.writeLongString(bytes: r)
        case .connectionTune(let t), .connectionTuneOk(let t):
            b.writeInteger(t.channelMax); b.writeInteger(t.frameMax); b.writeInteger(t.heartbeat)
        case .connectionOpen(let vhost):
            try b.writeShortString(vhost); try b.writeShortString(""); b.writeInteger(UInt8(0))
        case .connectionOpenOk: try b.writeShortString("")
        case .connectionClose(let c), .channelClose(let c):
            b.writeInteger(c.replyCode)
            // A reply text is informational: cut it rather than fail to close.
            try b.writeShortString(String(decoding: c.replyText.utf8.prefix(255), as: UTF8.self))
            b.writeInteger(c.classID); b.writeInteger(c.methodID)
        case .connectionCloseOk, .connectionUnblocked, .connectionUpdateSecretOk, .channelCloseOk,
             .exchangeDeclareOk, .exchangeDeleteOk, .exchangeBindOk, .exchangeUnbindOk, .queueBindOk, .queueUnbindOk,
             .basicQosOk, .basicRecoverOk, .confirmSelectOk, .txSelect, .txSelectOk, .txCommit, .txCommitOk,
             .txRollback, .txRollbackOk:
            break
        case .connectionBlocked(let reason): try b.writeShortString(reason)
        case .connectionUpdateSecret(let secret, let reason):
            b.writeLongString(bytes: secret); try b.writeShortString(reason)
        case .channelOpen: try b.writeShortString("")
        case .channelOpenOk: b.writeLongString("")
        case .channelFlow(let active), .channelFlowOk(let active): b.writeInteger(bits(active))
        case .exchangeDeclare(let m):
            b.writeInteger(UInt16(0))
            try b.writeShortString(m.exchange); try b.writeShortString(m.type)
            b.writeInteger(bits(m.passive, m.durable, m.autoDelete, m.internal, m.noWait))
            try b.writeFieldTable(m.arguments)
        case .exchangeDelete(let exchange, let ifUnused, let noWait):
            b.writeInteger(UInt16(0)); try b.writeShortString(exchange); b.writeInteger(bits(ifUnused, noWait))
        case .exchangeBind(let m), .exchangeUnbind(let m):
            b.writeInteger(UInt16(0))
            try b.writeShortString(m.destination); try b.writeShortString(m.source); try b.writeShortString(m.routingKey)
            b.writeInteger(bits(m.noWait))
            try b.writeFieldTable(m.arguments)
        case .queueDeclare(let m):
            b.writeInteger(UInt16(0))
            try b.writeShortString(m.queue)
            b.writeInteger(bits(m.passive, m.durable, m.exclusive, m.autoDelete, m.noWait))
            try b.writeFieldTable(m.arguments)
        case .queueDeclareOk(let m):
            try b.writeShortString(m.queue); b.writeInteger(m.messageCount); b.writeInteger(m.consumerCount)
        case .queueBind(let m):
            b.writeInteger(UInt16(0))
            try b.writeShortString(m.queue); try b.writeShortString(m.exchange); try b.writeShortString(m.routingKey)
            b.writeInteger(bits(m.noWait))
            try b.writeFieldTable(m.arguments)
        case .queueUnbind(let m):
            b.writeInteger(UInt16(0))
            try b.writeShortString(m.queue); try b.writeShortString(m.exchange); try b.writeShortString(m.routingKey)
            try b.writeFieldTable(m.arguments)
        case .queuePurge(let queue, let noWait):
            b.writeInteger(UInt16(0)); try b.writeShortString(queue); b.writeInteger(bits(noWait))
        case .queuePurgeOk(let count), .queueDeleteOk(let count): b.writeInteger(count)
        case .queueDelete(let queue, let ifUnused, let ifEmpty, let noWait):
            b.writeInteger(UInt16(0)); try b.writeShortString(queue); b.writeInteger(bits(ifUnused, ifEmpty, noWait))
        case .basicQos(let size, let count, let global):
            b.writeInteger(size); b.writeInteger(count); b.writeInteger(bits(global))
        case .basicConsume(let m):
            b.writeInteger(UInt16(0))
            try b.writeShortString(m.queue); try b.writeShortString(m.consumerTag)
            b.writeInteger(bits(m.noLocal, m.noAck, m.exclusive, m.noWait))
            try b.writeFieldTable(m.arguments)
        case .basicConsumeOk(let tag), .basicCancelOk(let tag): try b.writeShortString(tag)
        case .basicCancel(let tag, let noWait): try b.writeShortString(tag); b.writeInteger(bits(noWait))
        case .basicPublish(let m):
            b.writeInteger(UInt16(0))
            try b.writeShortString(m.exchange); try b.writeShortString(m.routingKey)
            b.writeInteger(bits(m.mandatory, m.immediate))
        case .basicReturn(let m):
            b.writeInteger(m.replyCode); try b.writeShortString(m.replyText)
            try b.writeShortString(m.exchange); try b.writeShortString(m.routingKey)
        case .basicDeliver(let m):
            try b.writeShortString(m.consumerTag); b.writeInteger(m.deliveryTag); b.writeInteger(bits(m.redelivered))
            try b.writeShortString(m.exchange); try b.writeShortString(m.routingKey)
        case .basicGet(let queue, let noAck):
            b.writeInteger(UInt16(0)); try b.writeShortString(queue); b.writeInteger(bits(noAck))
        case .basicGetOk(let m):
            b.writeInteger(m.deliveryTag); b.writeInteger(bits(m.redelivered))
            try b.writeShortString(m.exchange); try b.writeShortString(m.routingKey); b.writeInteger(m.messageCount)
        case .basicGetEmpty: try b.writeShortString("")
        case .basicAck(let tag, let multiple): b.writeInteger(tag); b.writeInteger(bits(multiple))
        case .basicReject(let tag, let requeue): b.writeInteger(tag); b.writeInteger(bits(requeue))
        case .basicRecoverAsync(let requeue), .basicRecover(let requeue): b.writeInteger(bits(requeue))
        case .basicNack(let tag, let multiple, let requeue): b.writeInteger(tag); b.writeInteger(bits(multiple, requeue))
        case .confirmSelect(let noWait): b.writeInteger(bits(noWait))
        }
    }
}

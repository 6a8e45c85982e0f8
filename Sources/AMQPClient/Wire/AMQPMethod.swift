import NIOCore

/// Every AMQP 0-9-1 method this client sends or understands, RabbitMQ's extensions included.
///
/// One case per method keeps the state machines exhaustive: a method the peer may
/// legally send in no state is still decoded, so it can be answered with the right
/// reply code rather than dropped.
public enum AMQPMethod: Sendable, Hashable {
    // connection (10)
    case connectionStart(ConnectionStart)
    case connectionStartOk(ConnectionStartOk)
    case connectionSecure(challenge: [UInt8])
    case connectionSecureOk(response: [UInt8])
    case connectionTune(ConnectionTune)
    case connectionTuneOk(ConnectionTune)
    case connectionOpen(vhost: String)
    case connectionOpenOk
    case connectionClose(CloseArguments)
    case connectionCloseOk
    case connectionBlocked(reason: String)
    case connectionUnblocked
    case connectionUpdateSecret(newSecret: [UInt8], reason: String)
    case connectionUpdateSecretOk
    // channel (20)
    case channelOpen
    case channelOpenOk
    case channelFlow(active: Bool)
    case channelFlowOk(active: Bool)
    case channelClose(CloseArguments)
    case channelCloseOk
    // exchange (40)
    case exchangeDeclare(ExchangeDeclare)
    case exchangeDeclareOk
    case exchangeDelete(exchange: String, ifUnused: Bool, noWait: Bool)
    case exchangeDeleteOk
    case exchangeBind(ExchangeBind)
    case exchangeBindOk
    case exchangeUnbind(ExchangeBind)
    case exchangeUnbindOk
    // queue (50)
    case queueDeclare(QueueDeclare)
    case queueDeclareOk(QueueDeclareOk)
    case queueBind(QueueBind)
    case queueBindOk
    case queuePurge(queue: String, noWait: Bool)
    case queuePurgeOk(messageCount: UInt32)
    case queueDelete(queue: String, ifUnused: Bool, ifEmpty: Bool, noWait: Bool)
    case queueDeleteOk(messageCount: UInt32)
    case queueUnbind(QueueBind)
    case queueUnbindOk
    // basic (60)
    case basicQos(prefetchSize: UInt32, prefetchCount: UInt16, global: Bool)
    case basicQosOk
    case basicConsume(BasicConsume)
    case basicConsumeOk(consumerTag: String)
    case basicCancel(consumerTag: String, noWait: Bool)
    case basicCancelOk(consumerTag: String)
    case basicPublish(BasicPublish)
    case basicReturn(BasicReturn)
    case basicDeliver(BasicDeliver)
    case basicGet(queue: String, noAck: Bool)
    case basicGetOk(BasicGetOk)
    case basicGetEmpty
    case basicAck(deliveryTag: UInt64, multiple: Bool)
    case basicReject(deliveryTag: UInt64, requeue: Bool)
    case basicRecoverAsync(requeue: Bool)
    case basicRecover(requeue: Bool)
    case basicRecoverOk
    case basicNack(deliveryTag: UInt64, multiple: Bool, requeue: Bool)
    // confirm (85)
    case confirmSelect(noWait: Bool)
    case confirmSelectOk
    // tx (90)
    case txSelect
    case txSelectOk
    case txCommit
    case txCommitOk
    case txRollback
    case txRollbackOk
}

/// `connection.start`: the server's greeting.
public struct ConnectionStart: Sendable, Hashable {
    public var versionMajor: UInt8
    public var versionMinor: UInt8
    public var serverProperties: FieldTable
    public var mechanisms: String
    public var locales: String
    public init(versionMajor: UInt8 = 0, versionMinor: UInt8 = 9, serverProperties: FieldTable = [:],
                mechanisms: String = "PLAIN AMQPLAIN", locales: String = "en_US") {
        self.versionMajor = versionMajor
        self.versionMinor = versionMinor
        self.serverProperties = serverProperties
        self.mechanisms = mechanisms
        self.locales = locales
    }
}

/// `connection.start-ok`: our identity, capabilities and credentials.
public struct ConnectionStartOk: Sendable, Hashable {
    public var clientProperties: FieldTable
    public var mechanism: String
    public var response: [UInt8]
    public var locale: String
    public init(clientProperties: FieldTable, mechanism: String, response: [UInt8], locale: String) {
        self.clientProperties = clientProperties
        self.mechanism = mechanism
        self.response = response
        self.locale = locale
    }
}

/// `connection.tune` and `connection.tune-ok`.
public struct ConnectionTune: Sendable, Hashable {
    public var channelMax: UInt16
    public var frameMax: UInt32
    public var heartbeat: UInt16
    public init(channelMax: UInt16, frameMax: UInt32, heartbeat: UInt16) {
        self.channelMax = channelMax
        self.frameMax = frameMax
        self.heartbeat = heartbeat
    }
}

/// `connection.close` and `channel.close`: why, and which method caused it.
public struct CloseArguments: Sendable, Hashable, CustomStringConvertible {
    public var replyCode: UInt16
    public var replyText: String
    public var classID: UInt16
    public var methodID: UInt16
    public init(replyCode: UInt16, replyText: String, classID: UInt16 = 0, methodID: UInt16 = 0) {
        self.replyCode = replyCode
        self.replyText = replyText
        self.classID = classID
        self.methodID = methodID
    }
    public var description: String { "\(replyCode) \(replyText)" + (classID != 0 ? " (method \(classID).\(methodID))" : "") }
}

public struct ExchangeDeclare: Sendable, Hashable {
    public var exchange: String
    public var type: String
    public var passive: Bool
    public var durable: Bool
    public var autoDelete: Bool
    public var `internal`: Bool
    public var noWait: Bool
    public var arguments: FieldTable
    public init(exchange: String, type: String = "topic", passive: Bool = false, durable: Bool = true,
                autoDelete: Bool = false, internal: Bool = false, noWait: Bool = false, arguments: FieldTable = [:]) {
        self.exchange = exchange
        self.type = type
        self.passive = passive
        self.durable = durable
        self.autoDelete = autoDelete
        self.internal = `internal`
        self.noWait = noWait
        self.arguments = arguments
    }
}

public struct ExchangeBind: Sendable, Hashable {
    public var destination: String
    public var source: String
    public var routingKey: String
    public var noWait: Bool
    public var arguments: FieldTable
    public init(destination: String, source: String, routingKey: String, noWait: Bool = false, arguments: FieldTable = [:]) {
        self.destination = destination
        self.source = source
        self.routingKey = routingKey
        self.noWait = noWait
        self.arguments = arguments
    }
}

public struct QueueDeclare: Sendable, Hashable {
    public var queue: String
    public var passive: Bool
    public var durable: Bool
    public var exclusive: Bool
    public var autoDelete: Bool
    public var noWait: Bool
    public var arguments: FieldTable
    public init(queue: String, passive: Bool = false, durable: Bool = false, exclusive: Bool = false,
                autoDelete: Bool = false, noWait: Bool = false, arguments: FieldTable = [:]) {
        self.queue = queue
        self.passive = passive
        self.durable = durable
        self.exclusive = exclusive
        self.autoDelete = autoDelete
        self.noWait = noWait
        self.arguments = arguments
    }
}

public struct QueueDeclareOk: Sendable, Hashable {
    public var queue: String
    public var messageCount: UInt32
    public var consumerCount: UInt32
    public init(queue: String, messageCount: UInt32, consumerCount: UInt32) {
        self.queue = queue
        self.messageCount = messageCount
        self.consumerCount = consumerCount
    }
}

/// `queue.bind` and `queue.unbind` (unbind has no no-wait bit on the wire).
public struct QueueBind: Sendable, Hashable {
    public var queue: String
    public var exchange: String
    public var routingKey: String
    public var noWait: Bool
    public var arguments: FieldTable
    public init(queue: String, exchange: String, routingKey: String, noWait: Bool = false, arguments: FieldTable = [:]) {
        self.queue = queue
        self.exchange = exchange
        self.routingKey = routingKey
        self.noWait = noWait
        self.arguments = arguments
    }
}

public struct BasicConsume: Sendable, Hashable {
    public var queue: String
    public var consumerTag: String
    public var noLocal: Bool
    public var noAck: Bool
    public var exclusive: Bool
    public var noWait: Bool
    public var arguments: FieldTable
    public init(queue: String, consumerTag: String = "", noLocal: Bool = false, noAck: Bool = false,
                exclusive: Bool = false, noWait: Bool = false, arguments: FieldTable = [:]) {
        self.queue = queue
        self.consumerTag = consumerTag
        self.noLocal = noLocal
        self.noAck = noAck
        self.exclusive = exclusive
        self.noWait = noWait
        self.arguments = arguments
    }
}

public struct BasicPublish: Sendable, Hashable {
    public var exchange: String
    public var routingKey: String
    public var mandatory: Bool
    public var immediate: Bool
    public init(exchange: String, routingKey: String, mandatory: Bool = false, immediate: Bool = false) {
        self.exchange = exchange
        self.routingKey = routingKey
        self.mandatory = mandatory
        self.immediate = immediate
    }
}

public struct BasicReturn: Sendable, Hashable {
    public var replyCode: UInt16
    public var replyText: String
    public var exchange: String
    public var routingKey: String
    public init(replyCode: UInt16, replyText: String, exchange: String, routingKey: String) {
        self.replyCode = replyCode
        self.replyText = replyText
        self.exchange = exchange
        self.routingKey = routingKey
    }
}

public struct BasicDeliver: Sendable, Hashable {
    public var consumerTag: String
    public var deliveryTag: UInt64
    public var redelivered: Bool
    public var exchange: String
    public var routingKey: String
    public init(consumerTag: String, deliveryTag: UInt64, redelivered: Bool, exchange: String, routingKey: String) {
        self.consumerTag = consumerTag
        self.deliveryTag = deliveryTag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routingKey = routingKey
    }
}

public struct BasicGetOk: Sendable, Hashable {
    public var deliveryTag: UInt64
    public var redelivered: Bool
    public var exchange: String
    public var routingKey: String
    public var messageCount: UInt32
    public init(deliveryTag: UInt64, redelivered: Bool, exchange: String, routingKey: String, messageCount: UInt32) {
        self.deliveryTag = deliveryTag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routingKey = routingKey
        self.messageCount = messageCount
    }
}

extension AMQPMethod {
    /// Whether the method is followed by a content header and body frames.
    public var hasContent: Bool {
        switch self {
        case .basicPublish, .basicReturn, .basicDeliver, .basicGetOk: return true
        default: return false
        }
    }
}

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

extension AMQPMethod {
    /// Whether the method is followed by a content header and body frames.
    public var hasContent: Bool {
        switch self {
        case .basicPublish, .basicReturn, .basicDeliver, .basicGetOk: return true
        default: return false
        }
    }
}

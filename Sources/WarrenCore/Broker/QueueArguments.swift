import AMQPClient

/// The arguments that declare a durable queue of `queueType` (`classic` or `quorum`).
///
/// A quorum queue gets a delivery limit no redelivery will reach: RabbitMQ 4.0 gives quorum
/// queues declared without one a limit of 20, and drops a message returned that many times
/// (no dead-letter exchange is set). Warren returns inbox deliveries whenever a client goes
/// away or lets an ack or a poll lease run out, so a client on a bad network would lose
/// messages it never saw. Not `-1` (unlimited on 4.x): RabbitMQ 3.x takes a negative limit
/// for 0 and drops a message at its first return. A classic queue refuses the argument.
public enum QueueArguments {
    public static let quorumDeliveryLimit: Int64 = 1_000_000

    public static func typed(_ queueType: String) -> FieldTable {
        var arguments: FieldTable = ["x-queue-type": .string(queueType)]
        if queueType == "quorum" { arguments["x-delivery-limit"] = .int64(quorumDeliveryLimit) }
        return arguments
    }
}

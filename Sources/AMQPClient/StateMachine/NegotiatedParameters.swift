/// The parameters both sides agreed on in `connection.tune`.
public struct NegotiatedParameters: Sendable, Hashable {
    public var channelMax: UInt16
    public var frameMax: UInt32
    /// Seconds; 0 disables heartbeats.
    public var heartbeat: UInt16
    public var serverProperties: FieldTable
}

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

import NIOCore

/// One live message on its way to the local subscribers of one subscription id.
public struct LiveDelivery: Sendable {
    /// The whole `msg` frame: built once per message and subscription id and shared by every
    /// socket it goes to.
    public let frame: ByteBuffer
    public let routeKey: RouteKey
    /// `routeKey`'s metrics class, looked up once per message rather than per socket.
    public let routeClass: RouteClass
    /// The envelope's `ts` (ms), for the delivery latency.
    public let acceptedAt: Int64
}

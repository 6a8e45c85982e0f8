import NIOCore

/// The `basic` class content properties carried in a content header frame.
///
/// Every property is optional: only those set are put on the wire, flagged in the
/// property-flags word, exactly as RabbitMQ reads them.
public struct BasicProperties: Sendable, Hashable {
    public var contentType: String?
    public var contentEncoding: String?
    public var headers: FieldTable?
    /// 1 = transient, 2 = persistent.
    public var deliveryMode: UInt8?
    public var priority: UInt8?
    public var correlationID: String?
    public var replyTo: String?
    /// Per-message TTL in milliseconds, as a decimal string ("0" = deliver now or never).
    public var expiration: String?
    public var messageID: String?
    /// Seconds since the Unix epoch.
    public var timestamp: UInt64?
    public var type: String?
    public var userID: String?
    public var appID: String?
    public var clusterID: String?

    public init(
        contentType: String? = nil, contentEncoding: String? = nil, headers: FieldTable? = nil,
        deliveryMode: UInt8? = nil, priority: UInt8? = nil, correlationID: String? = nil,
        replyTo: String? = nil, expiration: String? = nil, messageID: String? = nil,
        timestamp: UInt64? = nil, type: String? = nil, userID: String? = nil,
        appID: String? = nil, clusterID: String? = nil
    ) {
        self.contentType = contentType
        self.contentEncoding = contentEncoding
        self.headers = headers
        self.deliveryMode = deliveryMode
        self.priority = priority
        self.correlationID = correlationID
        self.replyTo = replyTo
        self.expiration = expiration
        self.messageID = messageID
        self.timestamp = timestamp
        self.type = type
        self.userID = userID
        self.appID = appID
        self.clusterID = clusterID
    }

    /// Persistent delivery (`delivery_mode = 2`): survives a broker restart in a durable queue.
    public static let persistent = BasicProperties(deliveryMode: 2)
}

extension BasicProperties {
    private enum Flag {
        static let contentType: UInt16 = 1 << 15
        static let contentEncoding: UInt16 = 1 << 14
        static let headers: UInt16 = 1 << 13
        static let deliveryMode: UInt16 = 1 << 12
        static let priority: UInt16 = 1 << 11
        static let correlationID: UInt16 = 1 << 10
        static let replyTo: UInt16 = 1 << 9
        static let expiration: UInt16 = 1 << 8
        static let messageID: UInt16 = 1 << 7
        static let timestamp: UInt16 = 1 << 6
        static let type: UInt16 = 1 << 5
        static let userID: UInt16 = 1 << 4
        static let appID: UInt16 = 1 << 3
        static let clusterID: UInt16 = 1 << 2
    }

    init(from buffer: inout ByteBuffer) throws(AMQPProtocolError) {
        let flags = try buffer.readAMQPInteger(UInt16.self, "property flags")
        // Bit 0 set means another flags word follows; basic has no more than 14 properties.
        guard flags & 1 == 0 else { throw .frameError("unsupported property flag continuation") }
        self.init()
        if flags & Flag.contentType != 0 { contentType = try buffer.readShortString("content-type") }
        if flags & Flag.contentEncoding != 0 { contentEncoding = try buffer.readShortString("content-encoding") }
        if flags & Flag.headers != 0 { headers = try buffer.readFieldTable() }
        if flags & Flag.deliveryMode != 0 { deliveryMode = try buffer.readAMQPInteger(UInt8.self, "delivery-mode") }
        if flags & Flag.priority != 0 { priority = try buffer.readAMQPInteger(UInt8.self, "priority") }
        if flags & Flag.correlationID != 0 { correlationID = try buffer.readShortString("correlation-id") }
        if flags & Flag.replyTo != 0 { replyTo = try buffer.readShortString("reply-to") }
        if flags & Flag.expiration != 0 { expiration = try buffer.readShortString("expiration") }
        if flags & Flag.messageID != 0 { messageID = try buffer.readShortString("message-id") }
        if flags & Flag.timestamp != 0 { timestamp = try buffer.readAMQPInteger(UInt64.self, "timestamp") }
        if flags & Flag.type != 0 { type = try buffer.readShortString("type") }
        if flags & Flag.userID != 0 { userID = try buffer.readShortString("user-id") }
        if flags & Flag.appID != 0 { appID = try buffer.readShortString("app-id") }
        if flags & Flag.clusterID != 0 { clusterID = try buffer.readShortString("cluster-id") }
    }

    func write(to buffer: inout ByteBuffer) throws(AMQPProtocolError) {
        var flags: UInt16 = 0
        if contentType != nil { flags |= Flag.contentType }
        if contentEncoding != nil { flags |= Flag.contentEncoding }
        if headers != nil { flags |= Flag.headers }
        if deliveryMode != nil { flags |= Flag.deliveryMode }
        if priority != nil { flags |= Flag.priority }
        if correlationID != nil { flags |= Flag.correlationID }
        if replyTo != nil { flags |= Flag.replyTo }
        if expiration != nil { flags |= Flag.expiration }
        if messageID != nil { flags |= Flag.messageID }
        if timestamp != nil { flags |= Flag.timestamp }
        if type != nil { flags |= Flag.type }
        if userID != nil { flags |= Flag.userID }
        if appID != nil { flags |= Flag.appID }
        if clusterID != nil { flags |= Flag.clusterID }
        buffer.writeInteger(flags)
        if let v = contentType { try buffer.writeShortString(v) }
        if let v = contentEncoding { try buffer.writeShortString(v) }
        if let v = headers { try buffer.writeFieldTable(v) }
        if let v = deliveryMode { buffer.writeInteger(v) }
        if let v = priority { buffer.writeInteger(v) }
        if let v = correlationID { try buffer.writeShortString(v) }
        if let v = replyTo { try buffer.writeShortString(v) }
        if let v = expiration { try buffer.writeShortString(v) }
        if let v = messageID { try buffer.writeShortString(v) }
        if let v = timestamp { buffer.writeInteger(v) }
        if let v = type { try buffer.writeShortString(v) }
        if let v = userID { try buffer.writeShortString(v) }
        if let v = appID { try buffer.writeShortString(v) }
        if let v = clusterID { try buffer.writeShortString(v) }
    }
}

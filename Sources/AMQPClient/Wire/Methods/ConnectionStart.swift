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

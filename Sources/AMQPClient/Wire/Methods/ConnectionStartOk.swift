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

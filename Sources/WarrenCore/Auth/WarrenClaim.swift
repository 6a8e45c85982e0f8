/// The optional `warren` claim: per-token subscribe / publish lists that replace the configured ones.
public struct WarrenClaim: Codable, Sendable, Equatable {
    public var subscribe: [String]?
    public var publish: [String]?

    public init(subscribe: [String]? = nil, publish: [String]? = nil) {
        self.subscribe = subscribe
        self.publish = publish
    }
}

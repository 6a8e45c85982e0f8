/// The optional `warren` claim: per-token subscribe / publish lists that replace the configured ones.
public struct WarrenClaim: Codable, Sendable, Equatable {
    public var subscribe: [String]?
    public var publish: [String]?
}

/// A message as Warren delivers it: the canonical envelope (docs/protocol.md).
public struct Envelope: Sendable, Hashable, Codable {
    public let v: Int
    /// Assigned by Warren (a UUIDv7); clients never choose it.
    public let id: String
    public let route: String
    public let type: String
    /// The authenticated sender, stamped by Warren.
    public let from: String
    /// `ws`, `poll` or `amqp`.
    public let via: String
    /// Warren's clock when accepted, Unix epoch milliseconds.
    public let ts: Int64
    public let body: JSONValue
    public let cid: String?
    public let transient: Bool?
    public let headers: [String: String]?
}

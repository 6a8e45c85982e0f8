/// An error Warren answered (`code` as in docs/protocol.md: `forbidden`, `bad_route`, `unavailable`, …),
/// or one of the client's own: `closed` (the client was closed), `bad_response`.
public struct WarrenError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: String
    public let message: String
    /// The HTTP status, for an error answered over HTTP.
    public let status: Int?
    /// What the error is about, when Warren names it: a subscription's id, a publish's cid.
    public let ref: String?

    public init(_ code: String, _ message: String, status: Int? = nil, ref: String? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.ref = ref
    }

    public var description: String { "\(code): \(message)" }

    static let closed = WarrenError("closed", "the client is closed")
}

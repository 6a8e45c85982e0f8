/// Starts a publishing client (fired as a user inbound event once every client is connected).
public struct BenchStart: Sendable {
    public init() {}
}

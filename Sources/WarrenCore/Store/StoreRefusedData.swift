/// The database refused a write for what a message holds — a value it cannot keep (PostgreSQL's
/// data exceptions and program limits, SQLite's "too big") — rather than for being unavailable:
/// writing the same rows again cannot succeed. ``StoreWriter`` then writes the batch one message
/// at a time and gives up only the message refused on its own.
public struct StoreRefusedData: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}

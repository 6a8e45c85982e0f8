/// A row the database gave back is not what the schema promises.
public struct StoreDataError: Error, CustomStringConvertible {
    public let description: String
}

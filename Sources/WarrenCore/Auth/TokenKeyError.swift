/// Why a key could not be loaded.
public struct TokenKeyError: Error, CustomStringConvertible {
    public var description: String
}

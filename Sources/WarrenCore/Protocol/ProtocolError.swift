/// A refused request: code, human message, and the `ref` of the frame it answers.
public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    public var ref: String?

    public init(_ code: ErrorCode, _ message: String, ref: String?) {
        self.code = code
        self.message = message
        self.ref = ref
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

extension ProtocolError {
    /// The same error, naming the request it answers.
    public func answering(_ ref: String) -> ProtocolError {
        var e = self
        e.ref = ref
        return e
    }
}

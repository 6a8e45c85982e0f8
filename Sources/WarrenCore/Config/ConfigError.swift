/// Why a configuration could not be accepted: which key, where, and why.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `section.key`, or the environment variable that set it.
    public var key: String
    /// 1-based line in the file, when the key came from the file.
    public var line: Int?
    public var reason: String

    public init(key: String, line: Int? = nil, reason: String) {
        self.key = key
        self.line = line
        self.reason = reason
    }

    public var description: String {
        if let line { return "\(key) (line \(line)): \(reason)" }
        return "\(key): \(reason)"
    }
}

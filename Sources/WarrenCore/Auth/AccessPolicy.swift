/// What one principal may publish to and subscribe to (docs/protocol.md).
///
/// Patterns carry a `{user}` placeholder, substituted with the principal's
/// name (itself a route word, so the result is still a valid pattern).
public struct AccessPolicy: Sendable, Equatable {
    public var subscribe: [String]
    public var publish: [String]

    public init(subscribe: [String], publish: [String]) {
        self.subscribe = subscribe
        self.publish = publish
    }

    /// The development default: your own conversations and public rooms.
    public static let standard = AccessPolicy(subscribe: ["#.{user}.#", "room.#"], publish: ["#.{user}.#", "room.#"])

    /// Checks the templates parse once `{user}` is replaced (by a sample user name).
    public func validate() throws(RouteError) {
        for template in subscribe + publish {
            _ = try TopicPattern(template.replacingOccurrences(of: "{user}", with: "u"))
        }
    }

    /// The rules for one user.
    public func resolved(for user: String) -> AccessRules {
        func expand(_ list: [String]) -> [TopicPattern] {
            list.compactMap { try? TopicPattern($0.replacingOccurrences(of: "{user}", with: user)) }
        }
        return AccessRules(subscribe: expand(subscribe), publish: expand(publish))
    }
}

extension String {
    /// Plain substring replacement without Foundation, byte by byte (run for every rule of every
    /// connecting user: the character-wise search showed in connect profiles).
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        let pattern = Array(target.utf8)
        guard let first = pattern.first else { return self }
        var source = self
        return source.withUTF8 { bytes -> String in
            var result: [UInt8] = []
            var i = 0
            var copied = 0
            while i + pattern.count <= bytes.count {
                if bytes[i] == first, bytes[i..<(i + pattern.count)].elementsEqual(pattern) {
                    if result.isEmpty { result.reserveCapacity(bytes.count + replacement.utf8.count) }
                    result.append(contentsOf: bytes[copied..<i])
                    result.append(contentsOf: replacement.utf8)
                    i += pattern.count
                    copied = i
                } else {
                    i += 1
                }
            }
            guard copied > 0 else { return self }
            result.append(contentsOf: bytes[copied...])
            return String(decoding: result, as: UTF8.self)
        }
    }
}

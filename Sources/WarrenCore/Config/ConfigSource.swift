import TOMLKit

/// Reads typed values from a parsed `bridge.toml`, with `WARREN_<SECTION>_<KEY>`
/// environment overrides, and remembers which keys were read so unknown ones
/// (typos) can be reported instead of silently ignored.
struct ConfigSource {
    let table: TOMLTable
    let text: String
    let environment: [String: String]
    private(set) var consumed: Set<String> = []

    init(text: String, environment: [String: String]) throws(ConfigError) {
        do {
            self.table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigError(key: "(file)", line: error.source.begin.line, reason: error.description)
        } catch {
            throw ConfigError(key: "(file)", reason: "\(error)")
        }
        self.text = text
        self.environment = environment
    }

    static func envName(_ section: String, _ key: String) -> String {
        "WARREN_\(section.uppercased())_\(key.uppercased())"
    }

    /// The 1-based line where `key` is set inside `[section]`, found in the text.
    func line(of section: String, _ key: String) -> Int? {
        var inSection = false
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") {
                inSection = line == "[\(section)]"
                continue
            }
            if inSection, line.hasPrefix(key), line.dropFirst(key.count).trimmingCharacters(in: .whitespaces).hasPrefix("=") {
                return index + 1
            }
        }
        return nil
    }

    /// An error about a value already read: named after the variable if the environment set it.
    func error(_ section: String, _ key: String, _ reason: String) -> ConfigError {
        error(section, key, fromEnv: environment[Self.envName(section, key)] != nil, reason)
    }

    /// The text of the file a key names; else this key's error saying why it cannot be read.
    func file(_ section: String, _ key: String, _ path: String) throws(ConfigError) -> String {
        switch TextFile.read(path) {
        case .success(let text): return text
        case .failure(let failure): throw error(section, key, "cannot read \(path): \(failure)")
        }
    }

    private func error(_ section: String, _ key: String, fromEnv: Bool, _ reason: String) -> ConfigError {
        fromEnv ? ConfigError(key: Self.envName(section, key), reason: reason)
            : ConfigError(key: "\(section).\(key)", line: line(of: section, key), reason: reason)
    }

    mutating func string(_ section: String, _ key: String, default value: String) throws(ConfigError) -> String {
        consumed.insert("\(section).\(key)")
        if let env = environment[Self.envName(section, key)] { return env }
        guard let raw = table[section]?.table?[key] else { return value }
        guard let s = raw.string else { throw error(section, key, fromEnv: false, "must be a string") }
        return s
    }

    mutating func int(_ section: String, _ key: String, default value: Int, range: ClosedRange<Int>) throws(ConfigError) -> Int {
        consumed.insert("\(section).\(key)")
        let result: Int
        var fromEnv = false
        if let env = environment[Self.envName(section, key)] {
            fromEnv = true
            guard let v = Int(env) else { throw error(section, key, fromEnv: true, "must be an integer") }
            result = v
        } else if let raw = table[section]?.table?[key] {
            guard let v = raw.int else { throw error(section, key, fromEnv: false, "must be an integer") }
            result = v
        } else {
            return value
        }
        guard range.contains(result) else {
            throw error(section, key, fromEnv: fromEnv, "must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return result
    }

    mutating func bool(_ section: String, _ key: String, default value: Bool) throws(ConfigError) -> Bool {
        consumed.insert("\(section).\(key)")
        if let env = environment[Self.envName(section, key)] {
            switch env.lowercased() {
            case "true", "1", "yes": return true
            case "false", "0", "no": return false
            default: throw error(section, key, fromEnv: true, "must be true or false")
            }
        }
        guard let raw = table[section]?.table?[key] else { return value }
        guard let b = raw.bool else { throw error(section, key, fromEnv: false, "must be true or false") }
        return b
    }

    /// One string or a list of them (`key = "a"` or `key = ["a", "b"]`); the environment form
    /// is comma-separated.
    /// A `queue_type` key: classic or quorum; `auto` (the default) is quorum (replicated) when
    /// the node is given a cluster of brokers, classic for one.
    mutating func queueType(_ section: String, brokers: Int) throws(ConfigError) -> String {
        let queueType = try string(section, "queue_type", default: "auto")
        guard ["auto", "classic", "quorum"].contains(queueType) else {
            throw error(section, "queue_type", "must be auto, classic or quorum")
        }
        return queueType == "auto" ? (brokers > 1 ? "quorum" : "classic") : queueType
    }

    mutating func stringOrArray(_ section: String, _ key: String, default value: [String]) throws(ConfigError) -> [String] {
        if environment[Self.envName(section, key)] == nil, let s = table[section]?.table?[key]?.string {
            consumed.insert("\(section).\(key)")
            return [s]
        }
        return try stringArray(section, key, default: value)
    }

    /// A list of strings; the environment form is comma-separated (`a, b`), or the file's own
    /// form (`["a", "b"]`, as in bridge.toml and in JSON), which was read as one odd item.
    mutating func stringArray(_ section: String, _ key: String, default value: [String]) throws(ConfigError) -> [String] {
        consumed.insert("\(section).\(key)")
        if let env = environment[Self.envName(section, key)] {
            let trimmed = env.trimmingCharacters(in: .whitespacesAndNewlines)
            guard trimmed.hasPrefix("[") else {
                return env.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            }
            guard let array = (try? TOMLTable(string: "list = " + trimmed))?["list"]?.array else {
                throw error(section, key, fromEnv: true, "a list is a, b (comma-separated) or [\"a\", \"b\"]")
            }
            return try strings(array, section, key, fromEnv: true)
        }
        guard let raw = table[section]?.table?[key] else { return value }
        guard let array = raw.array else { throw error(section, key, fromEnv: false, "must be a list of strings") }
        return try strings(array, section, key, fromEnv: false)
    }

    private func strings(_ array: TOMLArray, _ section: String, _ key: String, fromEnv: Bool) throws(ConfigError) -> [String] {
        var result: [String] = []
        for item in array {
            guard let s = item.string else { throw error(section, key, fromEnv: fromEnv, "must be a list of strings") }
            result.append(s)
        }
        return result
    }

    /// `[[name]]` tables: each as a dictionary of string values, with the line of its header.
    mutating func tableArray(_ name: String) throws(ConfigError) -> [(line: Int?, values: [String: String])] {
        guard let raw = table[name] else { return [] }
        guard let array = raw.array else { throw ConfigError(key: name, reason: "must be written [[\(name)]]") }
        let headerLines = text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            .filter { $0.element.trimmingCharacters(in: .whitespaces) == "[[\(name)]]" }.map { $0.offset + 1 }
        var result: [(line: Int?, values: [String: String])] = []
        for (index, item) in array.enumerated() {
            let line = index < headerLines.count ? headerLines[index] : nil
            guard let t = item.table else { throw ConfigError(key: name, line: line, reason: "must be a table") }
            var values: [String: String] = [:]
            for key in t.keys {
                guard let s = t[key]?.string else { throw ConfigError(key: "\(name).\(key)", line: line, reason: "must be a string") }
                values[key] = s
            }
            result.append((line, values))
        }
        return result
    }

    /// Every key in the file that no reader asked for: almost always a typo.
    func unknownKeys(knownSections: Set<String>) -> [ConfigError] {
        var errors: [ConfigError] = []
        for section in table.keys.sorted() {
            guard knownSections.contains(section) else {
                errors.append(ConfigError(key: section, reason: "unknown section"))
                continue
            }
            guard let t = table[section]?.table else { continue } // [[arrays]] are checked by their reader
            for key in t.keys.sorted() where !consumed.contains("\(section).\(key)") {
                errors.append(ConfigError(key: "\(section).\(key)", line: line(of: section, key), reason: "unknown key"))
            }
        }
        return errors
    }

    /// Every `WARREN_<SECTION>_<KEY>` variable of a known section that names no key a reader
    /// asked for (`WARREN_HTTP_LISTN`): a typo that would otherwise be silently ignored, as an
    /// unknown key in the file is not. Variables outside the sections (`WARREN_TOKEN` for
    /// `warren chat`, the scripts' own) are not Warren's configuration and are left alone.
    func unknownEnvironment(knownSections: Set<String>) -> [ConfigError] {
        let read = Set(consumed.map { name -> String in
            let parts = name.split(separator: ".", maxSplits: 1)
            return Self.envName(String(parts[0]), String(parts[1]))
        })
        var errors: [ConfigError] = []
        for name in environment.keys.sorted() where name.hasPrefix("WARREN_") && !read.contains(name) {
            let rest = name.dropFirst("WARREN_".count)
            guard let underscore = rest.firstIndex(of: "_"), knownSections.contains(rest[..<underscore].lowercased()) else { continue }
            errors.append(ConfigError(key: name, reason: "unknown key (no \(rest[..<underscore].lowercased()).\(rest[rest.index(after: underscore)...].lowercased()) in bridge.toml)"))
        }
        return errors
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: CharacterSetLike) -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" || f == "\r" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" { s = s.dropLast() }
        return String(s)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: CharacterSetLike) -> String { String(self).trimmingCharacters(in: set) }
}

/// Only whitespace trimming is needed; avoids pulling Foundation into the core for it.
fileprivate enum CharacterSetLike { case whitespaces }

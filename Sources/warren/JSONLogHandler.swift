import Foundation
import Logging

/// `log.format = "json"`: one JSON object per line on standard error, for log shippers.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String,
             file: String, function: String, line: UInt) {
        var fields: [String: String] = [
            "ts": ISO8601DateFormatter().string(from: Date()), "level": level.rawValue, "logger": label,
            "message": message.description, "source": source,
        ]
        for (k, v) in metadata.merging(explicit ?? [:], uniquingKeysWith: { $1 }) { fields[k] = "\(v)" }
        guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
        FileHandle.standardError.write(data + Data("\n".utf8))
    }
}

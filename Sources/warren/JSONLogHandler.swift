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

    func log(event: LogEvent) {
        var fields: [String: String] = [
            "ts": ISO8601DateFormatter().string(from: Date()), "level": event.level.rawValue, "logger": label,
            "message": event.message.description, "source": event.source,
        ]
        if let error = event.error { fields["error"] = "\(error)" }
        for (k, v) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) { fields[k] = "\(v)" }
        guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
        FileHandle.standardError.write(data + Data("\n".utf8))
    }
}

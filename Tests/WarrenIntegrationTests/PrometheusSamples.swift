import Foundation

/// Samples of a Prometheus text exposition: "name{labels}" → value.
struct PrometheusSamples {
    var values: [String: Double] = [:]
    var labelNames: Set<String> = []

    init(_ text: String) {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let v = Double(line[line.index(after: space)...]) else { continue }
            let key = String(line[..<space])
            values[key] = v
            if let open = key.firstIndex(of: "{") {
                for pair in key[key.index(after: open)..<key.index(before: key.endIndex)].split(separator: ",") {
                    labelNames.insert(String(pair.split(separator: "=")[0]))
                }
            }
        }
    }

    func value(_ name: String, _ labels: [(String, String)]) -> Double {
        values["\(name){\(labels.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ","))}"] ?? 0
    }

    func messages(_ route: String, _ frontend: String, _ direction: String) -> Double {
        value("warren_messages_total", [("route", route), ("frontend", frontend), ("direction", direction)])
    }
}

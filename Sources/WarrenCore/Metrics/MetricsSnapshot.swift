/// The figures of a Prometheus registry at one moment, read back from its text exposition:
/// `/v1/stats`, the dashboard and the tests read the very series `/metrics` shows, so no
/// figure is kept twice. swift-prometheus keeps no readable values of its own, and no mirrored
/// library reads the exposition format, so this small reader is written here (the lines are
/// `name{label="value",…} number`; comments and blank lines are skipped).
public struct MetricsSnapshot: Sendable {
    public struct Sample: Sendable, Equatable {
        public var name: String
        public var labels: [String: String]
        public var value: Double
    }

    public private(set) var samples: [Sample] = []

    public init(exposition bytes: [UInt8]) {
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            if end > start, bytes[start] != UInt8(ascii: "#"), let sample = Self.sample(bytes[start..<end]) { samples.append(sample) }
            start = end + 1
        }
    }

    /// The sum of the samples named `name` whose labels include `matching`.
    public func sum(_ name: String, _ matching: [String: String] = [:]) -> Double {
        samples.reduce(0) { total, s in
            s.name == name && matching.allSatisfy({ s.labels[$0.key] == $0.value }) ? total + s.value : total
        }
    }

    /// ``sum(_:_:)`` as a whole number (counters and gauges of counts).
    public func count(_ name: String, _ matching: [String: String] = [:]) -> Int {
        Int(sum(name, matching).rounded())
    }

    /// A histogram's observations and its p50 and p99 as bucket upper bounds (in its unit;
    /// `.infinity` above the top bucket), over the series whose labels include `matching`.
    public func histogram(_ name: String, _ matching: [String: String] = [:]) -> (count: Int, p50: Double?, p99: Double?) {
        var buckets: [Double: Double] = [:]
        for s in samples where s.name == name + "_bucket" && matching.allSatisfy({ s.labels[$0.key] == $0.value }) {
            guard let le = s.labels["le"].flatMap({ $0 == "+Inf" ? Double.infinity : Double($0) }) else { continue }
            buckets[le, default: 0] += s.value
        }
        let bounds = buckets.keys.sorted()
        let total = bounds.last.map { buckets[$0] ?? 0 } ?? 0
        func percentile(_ p: Double) -> Double? {
            guard total > 0 else { return nil }
            return bounds.first { (buckets[$0] ?? 0) >= p * total }
        }
        return (Int(total.rounded()), percentile(0.5), percentile(0.99))
    }

    private static func sample(_ line: ArraySlice<UInt8>) -> Sample? {
        var i = line.startIndex
        while i < line.endIndex, line[i] != UInt8(ascii: "{"), line[i] != UInt8(ascii: " ") { i += 1 }
        let name = String(decoding: line[line.startIndex..<i], as: UTF8.self)
        var labels: [String: String] = [:]
        if i < line.endIndex, line[i] == UInt8(ascii: "{") {
            i += 1
            while i < line.endIndex, line[i] != UInt8(ascii: "}") {
                let keyStart = i
                while i < line.endIndex, line[i] != UInt8(ascii: "=") { i += 1 }
                let key = String(decoding: line[keyStart..<i], as: UTF8.self)
                guard i + 1 < line.endIndex, line[i + 1] == UInt8(ascii: "\"") else { return nil }
                i += 2
                var value: [UInt8] = []
                while i < line.endIndex, line[i] != UInt8(ascii: "\"") {
                    if line[i] == UInt8(ascii: "\\"), i + 1 < line.endIndex {
                        i += 1
                        value.append(line[i] == UInt8(ascii: "n") ? 10 : line[i])
                    } else {
                        value.append(line[i])
                    }
                    i += 1
                }
                guard i < line.endIndex else { return nil }
                labels[key] = String(decoding: value, as: UTF8.self)
                i += 1
                if i < line.endIndex, line[i] == UInt8(ascii: ",") { i += 1 }
            }
            i += 1
        }
        let text = String(decoding: line[min(i, line.endIndex)...], as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
        let value: Double? = switch text {
        case "+Inf": .infinity
        case "-Inf": -.infinity
        default: Double(text)
        }
        guard !name.isEmpty, let value else { return nil }
        return Sample(name: name, labels: labels, value: value)
    }
}

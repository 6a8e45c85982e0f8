/// Durations as written in `bridge.toml` and on the command line: `90s`, `30m`, `12h`, `90d`.
public enum DurationText {
    /// The longest duration taken: a hundred years (longer ones would overflow where they are
    /// used in milliseconds, and mean "never" anyway).
    public static let longestSeconds = 100 * 365 * 86_400

    /// Whole seconds, or nil when `text` is not a positive number followed by s, m, h or d, or
    /// is longer than ``longestSeconds``.
    public static func seconds(_ text: String) -> Int? {
        guard let unit = text.last, let n = Int(text.dropLast()), n > 0 else { return nil }
        let multiplier: Int
        switch unit {
        case "s": multiplier = 1
        case "m": multiplier = 60
        case "h": multiplier = 3600
        case "d": multiplier = 86_400
        default: return nil
        }
        let (seconds, overflow) = n.multipliedReportingOverflow(by: multiplier)
        return overflow || seconds > longestSeconds ? nil : seconds
    }

    /// The shortest exact form of `seconds`.
    public static func text(_ seconds: Int) -> String {
        if seconds % 86_400 == 0 { return "\(seconds / 86_400)d" }
        if seconds % 3600 == 0 { return "\(seconds / 3600)h" }
        if seconds % 60 == 0 { return "\(seconds / 60)m" }
        return "\(seconds)s"
    }
}

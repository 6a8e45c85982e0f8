/// Durations as written in `bridge.toml` and on the command line: `90s`, `30m`, `12h`, `90d`.
public enum DurationText {
    /// Whole seconds, or nil when `text` is not a positive number followed by s, m, h or d.
    public static func seconds(_ text: String) -> Int? {
        guard let unit = text.last, let n = Int(text.dropLast()), n > 0 else { return nil }
        switch unit {
        case "s": return n
        case "m": return n * 60
        case "h": return n * 3600
        case "d": return n * 86_400
        default: return nil
        }
    }

    /// The shortest exact form of `seconds`.
    public static func text(_ seconds: Int) -> String {
        if seconds % 86_400 == 0 { return "\(seconds / 86_400)d" }
        if seconds % 3600 == 0 { return "\(seconds / 3600)h" }
        if seconds % 60 == 0 { return "\(seconds / 60)m" }
        return "\(seconds)s"
    }
}

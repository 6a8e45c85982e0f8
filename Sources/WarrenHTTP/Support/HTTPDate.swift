import Foundation

/// The `Date` header of the router's answers (RFC 9110 §5.6.7: `Sun, 06 Nov 1994 08:49:37 GMT`).
/// Hummingbird's own server kept one cached; the router's answers are the cold path, so it is
/// formatted for each.
enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func now() -> String { format(time(nil)) }

    static func format(_ seconds: time_t) -> String {
        var t = seconds
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

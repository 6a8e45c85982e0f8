/// Where a kept message stands in its route's history, and so in unread counts and the
/// conversation list: 12 hex digits of Unix milliseconds, then the envelope id (48 bytes;
/// byte order is time order, ties broken by id).
///
/// The time is the one a UUIDv7 id carries — when Warren accepted the message, so for Warren's
/// own ids the key sorts exactly as the ids do. But a plain AMQP publisher may name any UUID as
/// `message_id` (docs/protocol.md): a random version 4, which would sort anywhere, or a version 7 from
/// a clock far ahead, which would stay the newest message of its conversation for years and
/// hold a read marker set on it above everything published after. Such a message is placed at
/// the time the store took it from its queue instead. A client's `ts` is never used: any
/// publisher may set it.
public enum SortKey {
    /// How far ahead of the store's clock a UUIDv7's time may be and still be believed (clocks
    /// of nodes differ a little).
    public static let tolerance: Int64 = 60_000

    /// The largest time the key's 12 hex digits hold.
    static let latest: Int64 = 0xFFFF_FFFF_FFFF

    /// The key of a message kept `now` (Unix ms) under `id`.
    public static func of(id: String, storedAt now: Int64) -> String {
        key(id: id, at: time(of: id, now: now) ?? now)
    }

    /// The key of a message under `id` if the id alone places it (a believable UUIDv7): what a
    /// read marker or a `before` that names no kept message stands for.
    public static func placing(id: String, now: Int64) -> String? {
        time(of: id, now: now).map { key(id: id, at: $0) }
    }

    /// The 12 hex digits that begin every key of a message placed before `ms`: keys below it
    /// are older.
    public static func prefix(_ ms: Int64) -> String {
        String(UInt64(min(max(ms, 0), latest)), radix: 16).leftPadded(to: 12)
    }

    /// The id a key ends with.
    public static func id(of key: String) -> Substring { key.dropFirst(12) }

    /// The milliseconds a canonical lower-case UUIDv7 carries, if `id` is one not ahead of `now`
    /// by more than ``tolerance``.
    public static func time(of id: String, now: Int64) -> Int64? {
        let bytes = id.utf8
        guard bytes.count == 36, bytes.dropFirst(14).first == UInt8(ascii: "7") else { return nil }
        var ms: Int64 = 0
        for (k, c) in bytes.prefix(13).enumerated() where k != 8 {
            let digit: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c - UInt8(ascii: "a") + 10
            default: return nil
            }
            ms = ms << 4 | Int64(digit)
        }
        return ms <= now + tolerance ? ms : nil
    }

    static func key(id: String, at ms: Int64) -> String { prefix(ms) + id }
}

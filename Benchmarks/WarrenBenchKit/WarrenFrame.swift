/// Reading just enough of each target's frames to find the ``Stamp``: a few byte scans per
/// delivery instead of a JSON or STOMP parser, so the load tool's own cost stays small.

/// One Warren WebSocket frame, as far as the bench cares (docs/protocol.md).
public enum WarrenFrame: Equatable {
    /// `{"op":"msg",…}`: the stamp in `env.body`, and `env.id` when asked for (inbox acks).
    case message(Stamp?, id: String?)
    case subscribed
    /// `{"op":"puback",…}`: a publish acknowledged.
    case puback
    case error(String)
    case other
}

extension WarrenFrame {
    /// Classifies a text frame from Warren.
    public static func scan(_ bytes: UnsafeRawBufferPointer, wantID: Bool) -> WarrenFrame {
        if bytes.count > 12, find(#"{"op":"msg""#, in: UnsafeRawBufferPointer(rebasing: bytes[0..<12])) == 0 {
            var stamp: Stamp?
            if let b = find(#""body":""#, in: bytes) { stamp = Stamp.parse(bytes, from: b + 8) }
            var id: String?
            if wantID, let env = find(#""env":"#, in: bytes), let i = find(#""id":""#, in: bytes, from: env) {
                id = string(bytes, from: i + 6)
            }
            return .message(stamp, id: id)
        }
        if find(#""op":"puback""#, in: bytes) != nil { return .puback }
        if find(#""op":"subscribed""#, in: bytes) != nil { return .subscribed }
        if find(#""op":"error""#, in: bytes) != nil { return .error(String(decoding: bytes, as: UTF8.self)) }
        return .other
    }

    /// The characters of a JSON string from `start` up to its closing quote (no escapes:
    /// the ids and cursors Warren sends have none).
    public static func string(_ bytes: UnsafeRawBufferPointer, from start: Int) -> String? {
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
            guard bytes[end] != UInt8(ascii: "\\") else { return nil }
            end += 1
        }
        guard end < bytes.count else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }
}

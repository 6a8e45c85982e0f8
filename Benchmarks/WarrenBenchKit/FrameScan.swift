/// Reading just enough of each target's frames to find the ``Stamp``: a few byte scans per
/// delivery instead of a JSON or STOMP parser, so the load tool's own cost stays small.

/// One Warren WebSocket frame, as far as the bench cares (DESIGN §4).
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

/// A poll answer (DESIGN §5): `{"messages":[{"sub":…,"env":{…}},…],"cursor":"…"}`.
public enum PollAnswer {
    /// Calls `body` with each delivery's stamp (nil for a foreign message) and returns the cursor.
    public static func scan(_ bytes: UnsafeRawBufferPointer, _ body: (Stamp?) -> Void) -> String? {
        var from = 0
        while let b = find(#""body":"#, in: bytes, from: from) {
            let value = b + 7
            if value < bytes.count, bytes[value] == UInt8(ascii: "\"") {
                body(Stamp.parse(bytes, from: value + 1))
            } else {
                body(nil)
            }
            from = value
        }
        guard let c = find(#""cursor":""#, in: bytes) else { return nil }
        return WarrenFrame.string(bytes, from: c + 10)
    }

    /// The `session` of a `POST /v1/poll` answer.
    public static func session(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let s = find(#""session":""#, in: bytes) else { return nil }
        return WarrenFrame.string(bytes, from: s + 11)
    }
}

/// STOMP 1.2 frames as RabbitMQ Web-STOMP sends them: `COMMAND\nheaders\n\nbody\0`,
/// possibly several in one WebSocket message, possibly with heart-beat EOLs between them.
public enum StompCommand: Equatable {
    case connected, message, receipt, error, other
}

public enum StompScan {
    /// Calls `frame` for every complete frame in `bytes` with its command and the byte range
    /// of its body. Returns how many bytes were consumed (a trailing partial frame is left).
    @discardableResult
    public static func frames(_ bytes: UnsafeRawBufferPointer, _ frame: (StompCommand, Range<Int>) -> Void) -> Int {
        var i = 0
        var consumed = 0
        while i < bytes.count {
            // Heart-beats and stray EOLs between frames.
            while i < bytes.count, bytes[i] == 10 || bytes[i] == 13 { i += 1 }
            consumed = i
            guard i < bytes.count else { break }
            let commandStart = i
            i = index(of: 10, in: bytes, from: i) ?? bytes.count
            guard i < bytes.count else { return consumed }
            var commandEnd = i
            if commandEnd > commandStart, bytes[commandEnd - 1] == 13 { commandEnd -= 1 }
            let command = classify(UnsafeRawBufferPointer(rebasing: bytes[commandStart..<commandEnd]))
            // Headers end at an empty line.
            var bodyStart: Int?
            while i < bytes.count {
                // i is at an LF; the next line is empty if it is LF or CR LF.
                if i + 1 < bytes.count, bytes[i + 1] == 10 { bodyStart = i + 2; break }
                if i + 2 < bytes.count, bytes[i + 1] == 13, bytes[i + 2] == 10 { bodyStart = i + 3; break }
                i = index(of: 10, in: bytes, from: i + 1) ?? bytes.count
            }
            guard let start = bodyStart else { return consumed }
            guard let end = index(of: 0, in: bytes, from: start) else { return consumed }
            frame(command, start..<end)
            i = end + 1
            consumed = i
        }
        return consumed
    }

    static func classify(_ command: UnsafeRawBufferPointer) -> StompCommand {
        switch command.count {
        case 7 where command.elementsEqual("MESSAGE".utf8): return .message
        case 7 where command.elementsEqual("RECEIPT".utf8): return .receipt
        case 9 where command.elementsEqual("CONNECTED".utf8): return .connected
        case 5 where command.elementsEqual("ERROR".utf8): return .error
        default: return .other
        }
    }
}

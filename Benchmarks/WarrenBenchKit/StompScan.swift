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

/// Nchan answers: one message body, or (raw multipart) several separated by newlines.
public enum NchanAnswer {
    /// Calls `body` with the stamp of each message in the answer.
    public static func scan(_ bytes: UnsafeRawBufferPointer, _ body: (Stamp?) -> Void) {
        var start = 0
        while start < bytes.count {
            let end = index(of: UInt8(ascii: "\n"), in: bytes, from: start) ?? bytes.count
            if end > start { body(Stamp.parse(bytes, from: start)) }
            start = end + 1
        }
    }
}

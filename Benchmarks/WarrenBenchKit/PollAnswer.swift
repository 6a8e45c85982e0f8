/// A poll answer (docs/protocol.md): `{"messages":[{"sub":…,"env":{…}},…],"cursor":"…"}`.
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

/// A session string as the key of the sessions open on a node: compared whole, hashed on its
/// last 32 bytes only. A session string is an HS256 JWT, so those bytes are its signature's,
/// as unlike between two sessions as any hash; the few hundred bytes before them (its claims)
/// were hashed on every poll (SipHash over the whole string: ~1 % of Warren's samples in the
/// poll benchmark). A string made to share a signature's last bytes with an open session's
/// only shares its bucket, it is not taken for it.
struct PollSessionKey: Hashable, Sendable {
    let token: String

    init(_ token: String) { self.token = token }

    static func == (a: PollSessionKey, b: PollSessionKey) -> Bool { a.token == b.token }

    func hash(into hasher: inout Hasher) {
        var token = token
        token.withUTF8 { bytes in hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(32)))) }
    }
}

extension Dictionary where Key == PollSessionKey {
    /// The value kept for session string `token`.
    subscript(_ token: String) -> Value? {
        get { self[PollSessionKey(token)] }
        set { self[PollSessionKey(token)] = newValue }
    }
}

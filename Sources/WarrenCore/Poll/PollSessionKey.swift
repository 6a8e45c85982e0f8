#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A session string as the key of the sessions open on a node: compared whole, hashed on its
/// last 32 bytes only. A session string is an HS256 JWT, so those bytes are its signature's,
/// as unlike between two sessions as any hash; the few hundred bytes before them (its claims)
/// were hashed on every poll (SipHash over the whole string: ~1 % of Warren's samples in the
/// poll benchmark). A string made to share a signature's last bytes with an open session's
/// only shares its bucket, it is not taken for it.
///
/// Kept as a `Substring`, so that a poll looks its session up by the slice of its request
/// target that names it: no `String` is made per poll (one of a few hundred bytes was, a
/// fifth of the poll path's allocations). Compared on the bytes.
struct PollSessionKey: Hashable, Sendable {
    let token: Substring

    init(_ token: String) { self.token = token[...] }
    init(_ token: Substring) { self.token = token }

    static func == (a: PollSessionKey, b: PollSessionKey) -> Bool {
        a.withBytes { x in b.withBytes { y in x.count == y.count && (x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0) } }
    }

    func hash(into hasher: inout Hasher) {
        withBytes { bytes in hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes.suffix(32))) }
    }

    /// The token's UTF-8 bytes, contiguous (a native string's always are; a bridged one is copied).
    private func withBytes<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T {
        if let done = token.utf8.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) { return done }
        var copy = String(token)
        return copy.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }
}

extension Dictionary where Key == PollSessionKey {
    /// The value kept for session string `token`.
    subscript(_ token: String) -> Value? {
        get { self[PollSessionKey(token)] }
        set { self[PollSessionKey(token)] = newValue }
    }

    /// The value kept for the session string `token` (a slice of a request's target).
    subscript(_ token: Substring) -> Value? { self[PollSessionKey(token)] }
}

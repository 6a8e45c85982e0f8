#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte searches over a request's contiguous bytes with `memchr` and `memcmp`: the poll path
/// reads a head of a few hundred bytes (most of it the session string) on every poll, and
/// byte-by-byte scans of it were ~6 % of Warren's samples in the poll benchmark.
enum ByteSearch {
    /// The index of the first `byte` in `bytes[from..<to]` (`to` nil: the end).
    static func index(of byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from: Int, to: Int? = nil) -> Int? {
        let end = to ?? bytes.count
        guard let base = bytes.baseAddress, from < end,
              let found = memchr(base + from, Int32(byte), end - from) else { return nil }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }

    /// Whether the bytes are exactly `text`.
    static func equals(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        guard let start = bytes.base.baseAddress else { return true }
        return memcmp(start + bytes.startIndex, text.utf8Start, bytes.count) == 0
    }

    /// Whether the bytes begin with `text`.
    static func hasPrefix(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        guard bytes.count >= text.utf8CodeUnitCount else { return false }
        guard let start = bytes.baseAddress else { return true }
        return memcmp(start, text.utf8Start, text.utf8CodeUnitCount) == 0
    }
}

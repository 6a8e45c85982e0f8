/// A request as the floor servers take it: how many bytes it spans and what it asks.
/// Hand-written scans; nothing is validated.
struct FloorRequest {
    enum Kind {
        case poll, create, ready, other
    }

    let length: Int
    let kind: Kind

    /// The first complete request in `b`, or nil.
    static func first(_ b: UnsafeRawBufferPointer) -> FloorRequest? {
        guard let end = headEnd(b) else { return nil }
        let total = end + contentLength(b, end: end)
        guard b.count >= total else { return nil }
        let kind: Kind =
            starts(b, "GET /v1/poll/") ? .poll
            : starts(b, "POST /v1/poll") ? .create
            : starts(b, "GET /readyz") || starts(b, "GET /healthz") ? .ready : .other
        return FloorRequest(length: total, kind: kind)
    }

    private static func headEnd(_ b: UnsafeRawBufferPointer) -> Int? {
        var i = 0
        while i + 3 < b.count {
            if b[i] == 13, b[i + 1] == 10, b[i + 2] == 13, b[i + 3] == 10 { return i + 4 }
            i += 1
        }
        return nil
    }

    private static func contentLength(_ b: UnsafeRawBufferPointer, end: Int) -> Int {
        let name: StaticString = "content-length:"
        let n = name.utf8CodeUnitCount
        var i = 0
        outer: while i + n < end {
            for k in 0..<n {
                var c = b[i + k]
                if c >= 65, c <= 90 { c += 32 }
                if c != name.utf8Start[k] { i += 1; continue outer }
            }
            var j = i + n
            while j < end, b[j] == 32 { j += 1 }
            var value = 0
            while j < end, b[j] >= 48, b[j] <= 57 { value = value * 10 + Int(b[j] - 48); j += 1 }
            return value
        }
        return 0
    }

    private static func starts(_ b: UnsafeRawBufferPointer, _ prefix: StaticString) -> Bool {
        guard b.count >= prefix.utf8CodeUnitCount else { return false }
        for k in 0..<prefix.utf8CodeUnitCount where b[k] != prefix.utf8Start[k] { return false }
        return true
    }
}

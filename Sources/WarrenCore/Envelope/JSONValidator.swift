/// Tells whether bytes are one complete JSON document, as strictly as ``JSONParser`` reads one
/// (RFC 8259; nesting up to ``JSONParser/maxDepth``; strings of valid UTF-8 without control
/// characters, escapes well formed, surrogates paired; numbers a double holds), without building
/// it: one pass over the bytes, no allocation.
///
/// It guards the one place Warren hands bytes from the broker to clients without parsing them:
/// a message marked as Warren's own (``EnvelopeAMQPMapping``), which any AMQP publisher can
/// mark so. A text frame that is not JSON, or not UTF-8, would break every client it reaches
/// (browsers close the socket on invalid UTF-8) and, in an inbox, again at each redelivery.
/// Written by hand because it is on the delivery path (a scan of an envelope's couple of
/// hundred bytes) and no mirrored library validates without building values.
public enum JSONValidator {
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var scanner = Scanner(bytes)
        return scanner.document()
    }

    public static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
        if let answer = bytes.withContiguousStorageIfAvailable({ isValid(UnsafeRawBufferPointer($0)) }) { return answer }
        return Array(bytes).withUnsafeBytes { isValid($0) }
    }

    private struct Scanner {
        let p: UnsafeRawBufferPointer
        let n: Int
        var i = 0

        init(_ p: UnsafeRawBufferPointer) {
            self.p = p
            self.n = p.count
        }

        @inline(__always) mutating func skipWhitespace() {
            while i < n {
                let b = p[i]
                guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
                i += 1
            }
        }

        /// The whole input: one value, surrounding whitespace allowed. Containers are tracked on
        /// a bit stack (bit `d` set: the container at depth `d` is an object), so nesting costs
        /// no recursion and no memory.
        mutating func document() -> Bool {
            var depth = 0
            var objects: UInt64 = 0
            var needValue = true
            while true {
                skipWhitespace()
                guard i < n else { return false }
                if needValue {
                    // As the parser: every value, a container's members too, at a depth below the limit.
                    guard depth < JSONParser.maxDepth else { return false }
                    switch p[i] {
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        let isObject = p[i] == UInt8(ascii: "{")
                        i += 1
                        skipWhitespace()
                        guard i < n else { return false }
                        if p[i] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                            i += 1
                            needValue = false
                            if depth == 0 { return end() }
                            continue
                        }
                        if isObject { objects |= 1 << UInt64(depth) } else { objects &= ~(1 << UInt64(depth)) }
                        depth += 1
                        if isObject, !memberName() { return false }
                        continue
                    case UInt8(ascii: "\""):
                        guard string() else { return false }
                    case UInt8(ascii: "t"):
                        guard literal("true") else { return false }
                    case UInt8(ascii: "f"):
                        guard literal("false") else { return false }
                    case UInt8(ascii: "n"):
                        guard literal("null") else { return false }
                    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                        guard number() else { return false }
                    default:
                        return false
                    }
                    needValue = false
                    if depth == 0 { return end() }
                    continue
                }
                // After a value inside a container: a comma, or the container's end.
                let inObject = objects & (1 << UInt64(depth - 1)) != 0
                switch p[i] {
                case UInt8(ascii: ","):
                    i += 1
                    if inObject, !memberName() { return false }
                    needValue = true
                case UInt8(ascii: "}") where inObject, UInt8(ascii: "]") where !inObject:
                    i += 1
                    depth -= 1
                    if depth == 0 { return end() }
                default:
                    return false
                }
            }
        }

        /// Only whitespace after the document.
        mutating func end() -> Bool {
            skipWhitespace()
            return i == n
        }

        /// `"name" :` inside an object, leaving `i` after the colon.
        mutating func memberName() -> Bool {
            skipWhitespace()
            guard i < n, p[i] == UInt8(ascii: "\""), string() else { return false }
            skipWhitespace()
            guard i < n, p[i] == UInt8(ascii: ":") else { return false }
            i += 1
            return true
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let k = word.utf8CodeUnitCount
            guard i + k <= n else { return false }
            for j in 0..<k where p[i + j] != word.utf8Start[j] { return false }
            i += k
            return true
        }

        @inline(__always) func isDigit(_ k: Int) -> Bool { k < n && p[k] >= UInt8(ascii: "0") && p[k] <= UInt8(ascii: "9") }

        mutating func number() -> Bool {
            let start = i
            if p[i] == UInt8(ascii: "-") { i += 1 }
            guard isDigit(i) else { return false }
            let integerStart = i
            if p[i] == UInt8(ascii: "0") {
                i += 1
            } else {
                while isDigit(i) { i += 1 }
            }
            let integerDigits = i - integerStart
            if i < n, p[i] == UInt8(ascii: ".") {
                i += 1
                guard isDigit(i) else { return false }
                while isDigit(i) { i += 1 }
            }
            var exponent = 0
            if i < n, p[i] == UInt8(ascii: "e") || p[i] == UInt8(ascii: "E") {
                i += 1
                var sign = 1
                if i < n, p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-") {
                    if p[i] == UInt8(ascii: "-") { sign = -1 }
                    i += 1
                }
                guard isDigit(i) else { return false }
                while isDigit(i) {
                    exponent = JSONNumberRange.accumulate(exponent, digit: p[i])
                    i += 1
                }
                exponent *= sign
            }
            let p = self.p, end = i
            return JSONNumberRange.isFinite(integerDigits: integerDigits, exponent: exponent) {
                String(decoding: UnsafeRawBufferPointer(rebasing: p[start..<end]), as: UTF8.self)
            }
        }

        /// A string from its opening quote, leaving `i` after the closing one.
        mutating func string() -> Bool {
            i += 1
            while i < n {
                let b = p[i]
                if b == UInt8(ascii: "\"") {
                    i += 1
                    return true
                }
                if b < 0x20 { return false }
                if b == UInt8(ascii: "\\") {
                    guard escape() else { return false }
                    continue
                }
                if b < 0x80 {
                    i += 1
                    continue
                }
                guard utf8Sequence() else { return false }
            }
            return false
        }

        /// An escape from its backslash.
        mutating func escape() -> Bool {
            guard i + 1 < n else { return false }
            switch p[i + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                 UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                i += 2
                return true
            case UInt8(ascii: "u"):
                guard let unit = hex4(at: i + 2) else { return false }
                i += 6
                if unit >= 0xDC00 && unit <= 0xDFFF { return false }  // a low surrogate alone
                guard unit >= 0xD800 && unit <= 0xDBFF else { return true }
                // A high surrogate: a low one must follow.
                guard i + 1 < n, p[i] == UInt8(ascii: "\\"), p[i + 1] == UInt8(ascii: "u"), let low = hex4(at: i + 2),
                      low >= 0xDC00 && low <= 0xDFFF else { return false }
                i += 6
                return true
            default:
                return false
            }
        }

        func hex4(at k: Int) -> UInt32? {
            guard k + 4 <= n else { return nil }
            var v: UInt32 = 0
            for j in k..<(k + 4) {
                let c = p[j]
                let d: UInt8
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c &- UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c &- UInt8(ascii: "a") &+ 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c &- UInt8(ascii: "A") &+ 10
                default: return nil
                }
                v = v << 4 | UInt32(d)
            }
            return v
        }

        /// One multi-byte UTF-8 sequence from its lead byte (RFC 3629: no overlong forms, no
        /// surrogates, nothing above U+10FFFF).
        mutating func utf8Sequence() -> Bool {
            let lead = p[i]
            let count: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: count = 1
            case 0xE0: count = 2; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: count = 2
            case 0xED: count = 2; high = 0x9F
            case 0xF0: count = 3; low = 0x90
            case 0xF1...0xF3: count = 3
            case 0xF4: count = 3; high = 0x8F
            default: return false
            }
            guard i + count < n else { return false }
            let second = p[i + 1]
            guard second >= low, second <= high else { return false }
            var j = 2
            while j <= count {
                guard p[i + j] & 0xC0 == 0x80 else { return false }
                j += 1
            }
            i += count + 1
            return true
        }
    }
}

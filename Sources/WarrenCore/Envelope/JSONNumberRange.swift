/// Whether a JSON number a parser or validator just read is one a double can hold.
///
/// RFC 8259 §6 lets implementations limit the range of numbers, and every client does: a
/// number past ±1.8e308 (`1e999`) is `Infinity` to JavaScript and an error to Swift's
/// `JSONDecoder`, which then refuses the whole frame or history page that carries it. So Warren
/// refuses it where it reads JSON, as it refuses other JSON clients cannot read. Numbers keep
/// their exact text otherwise (a 30-digit integer is allowed: clients round it, none fail).
enum JSONNumberRange {
    /// The bound on a number's decimal exponent, past which only parsing tells.
    static let safeExponent = 308

    /// `integerDigits + exponent` bounds the number's magnitude (below 10 to that power); only
    /// past ``safeExponent`` is the text itself parsed, which no chat message's number reaches.
    @inline(__always)
    static func isFinite(integerDigits: Int, exponent: Int, text: () -> String) -> Bool {
        integerDigits + exponent <= safeExponent || (Double(text())?.isFinite ?? false)
    }

    /// Adds a digit to an exponent read so far, saturating far past any double's range.
    @inline(__always)
    static func accumulate(_ exponent: Int, digit: UInt8) -> Int {
        min(exponent * 10 + Int(digit &- UInt8(ascii: "0")), 1_000_000)
    }
}

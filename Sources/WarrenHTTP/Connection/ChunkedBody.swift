import NIOCore

/// Reads a chunked request body (RFC 9112 §7.1) as its bytes arrive: chunk sizes in hex with
/// optional extensions, each chunk's data and its CR LF, the last (zero) chunk and the
/// trailer section, whose fields are read and dropped. A size that overflows, or that takes
/// the body past its limit, is refused before a byte of that chunk is held; so is a chunk whose
/// data is longer or shorter than its size, a bare LF, or a size or trailer line over
/// ``maxLineBytes``.
struct ChunkedBody: Equatable, Sendable {
    enum Step: Equatable, Sendable {
        case size
        /// Bytes of the current chunk's data still to come.
        case data(Int)
        /// The CR LF after a chunk's data.
        case dataEnd
        case trailer
        case done
    }

    enum Outcome: Equatable, Sendable {
        case needMore
        case done
        case refused(HTTPRefusal)
    }

    /// A chunk-size line (extensions included) or a trailer line.
    static let maxLineBytes = 4096
    /// All trailer fields together.
    static let maxTrailerBytes = 16 << 10

    private(set) var step = Step.size
    /// Data bytes read so far.
    private(set) var total = 0
    private var trailerBytes = 0

    /// Moves what `input` holds of the body into `body` (consuming its framing), up to the end
    /// of the body if it is all there.
    mutating func decode(_ input: inout ByteBuffer, into body: inout ByteBuffer, maxBody: Int) -> Outcome {
        while true {
            switch step {
            case .done:
                return .done
            case .size:
                let line: ByteBuffer
                switch Self.takeLine(&input) {
                case .needMore: return .needMore
                case .refused(let refusal): return .refused(refusal)
                case .line(let l): line = l
                }
                let size: Int
                switch Self.chunkSize(line) {
                case .failure(let refusal): return .refused(refusal)
                case .success(let s): size = s
                }
                guard size <= maxBody - total else { return .refused(.bodyTooLarge(maxBody)) }
                step = size == 0 ? .trailer : .data(size)
            case .data(let remaining):
                let n = min(remaining, input.readableBytes)
                guard n > 0 else { return .needMore }
                var slice = input.readSlice(length: n)!
                body.writeBuffer(&slice)
                total += n
                step = n == remaining ? .dataEnd : .data(remaining - n)
            case .dataEnd:
                let view = input.readableBytesView
                if let first = view.first, first != 13 { return .refused(.badChunk) }
                guard view.count >= 2 else { return .needMore }
                guard view[view.startIndex + 1] == 10 else { return .refused(.badChunk) }
                input.moveReaderIndex(forwardBy: 2)
                step = .size
            case .trailer:
                switch Self.takeLine(&input) {
                case .needMore: return .needMore
                case .refused(let refusal): return .refused(refusal)
                case .line(let line):
                    if line.readableBytes == 0 {
                        step = .done
                        return .done
                    }
                    // Read and dropped, but a field all the same (a proxy would refuse another).
                    guard line.withUnsafeReadableBytes({ RawRequestHead.isField($0.bindMemory(to: UInt8.self)[...]) }) else {
                        return .refused(.badChunk)
                    }
                    trailerBytes += line.readableBytes + 2
                    guard trailerBytes <= Self.maxTrailerBytes else { return .refused(.headTooLarge) }
                }
            }
        }
    }

    private enum Line {
        case needMore
        case line(ByteBuffer)
        case refused(HTTPRefusal)
    }

    /// The next CR LF-terminated line (without its CR LF), taken from `input`.
    private static func takeLine(_ input: inout ByteBuffer) -> Line {
        let view = input.readableBytesView
        guard let lf = view.firstIndex(of: 10) else {
            if view.count > maxLineBytes { return .refused(.badChunk) }
            // A CR must be followed by its LF.
            if let cr = view.firstIndex(of: 13), cr < view.endIndex - 1 { return .refused(.badChunk) }
            return .needMore
        }
        let length = lf - view.startIndex
        guard length >= 1, view[lf - 1] == 13, length - 1 <= maxLineBytes else { return .refused(.badChunk) }
        let line = input.readSlice(length: length - 1)!
        input.moveReaderIndex(forwardBy: 2)
        guard !line.readableBytesView.contains(13) else { return .refused(.badChunk) }
        return .line(line)
    }

    /// A chunk-size line's size: hex digits, then nothing or extensions (`;` after optional
    /// spaces or tabs).
    private static func chunkSize(_ line: ByteBuffer) -> Result<Int, HTTPRefusal> {
        var size = 0
        var digits = 0
        let view = line.readableBytesView
        var i = view.startIndex
        while i < view.endIndex, let digit = hexValue(view[i]) {
            // One more digit would not fit: no body is that large.
            guard size <= Int.max >> 4 else { return .failure(.chunkSizeOverflow) }
            size = size << 4 | digit
            digits += 1
            i += 1
        }
        guard digits > 0, extensionsAreWellFormed(view[i...]) else { return .failure(.badChunk) }
        return .success(size)
    }

    /// Chunk extensions (RFC 9112 §7.1.1): `;name` or `;name=value`, the value a token or a
    /// quoted string, with optional spaces or tabs around `;` and `=`. Read and ignored.
    private static func extensionsAreWellFormed(_ bytes: ByteBufferView.SubSequence) -> Bool {
        var i = bytes.startIndex
        func skipSpace() { while i < bytes.endIndex, bytes[i] == 32 || bytes[i] == 9 { i += 1 } }
        func token() -> Bool {
            let start = i
            while i < bytes.endIndex, RawRequestHead.isTokenByte(bytes[i]) { i += 1 }
            return i > start
        }
        while true {
            skipSpace()
            guard i < bytes.endIndex else { return true }
            guard bytes[i] == UInt8(ascii: ";") else { return false }
            i += 1
            skipSpace()
            guard token() else { return false }
            skipSpace()
            guard i < bytes.endIndex, bytes[i] == UInt8(ascii: "=") else { continue }
            i += 1
            skipSpace()
            if i < bytes.endIndex, bytes[i] == UInt8(ascii: "\"") {
                i += 1
                var closed = false
                while i < bytes.endIndex {
                    let b = bytes[i]
                    if b == UInt8(ascii: "\"") {
                        closed = true
                        i += 1
                        break
                    }
                    if b == UInt8(ascii: "\\") { i += 1 }
                    guard i < bytes.endIndex, bytes[i] == 9 || (bytes[i] >= 32 && bytes[i] != 127) else { return false }
                    i += 1
                }
                guard closed else { return false }
            } else {
                guard token() else { return false }
            }
        }
    }

    private static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(b - 48)
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(b - 87)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(b - 55)
        default: nil
        }
    }
}

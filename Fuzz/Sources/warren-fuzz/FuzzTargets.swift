#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import AMQPClient
import NIOCore
import WarrenCore

/// The decoders that read bytes Warren does not control, one per fuzz target.
/// `WARREN_FUZZ_TARGET` selects which one a run exercises (scripts/fuzz.sh sets it).
/// Each target also checks a property, so a wrong answer is a finding, not only a crash.
enum FuzzTarget: String, CaseIterable {
    /// Bodies from the broker turned into envelopes, then encoded: the encoding must parse; the
    /// JSON validator agrees with the parser, and a body under Warren's mark passes through only
    /// if it is JSON.
    case envelope
    /// WebSocket text frames from clients.
    case wsop
    /// Topic patterns and routing keys from clients: parse, match, containment.
    case pattern
    /// AMQP frames from the broker, fed in arbitrary splits.
    case amqp

    static let selected: FuzzTarget = {
        let name = getenv("WARREN_FUZZ_TARGET").map { String(cString: $0) } ?? "envelope"
        guard let target = FuzzTarget(rawValue: name) else {
            fatalError("WARREN_FUZZ_TARGET must be one of \(FuzzTarget.allCases.map(\.rawValue))")
        }
        return target
    }()

    func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        switch self {
        case .envelope: Self.envelope(bytes)
        case .wsop: _ = try? ClientFrame.parse(bytes)
        case .pattern: Self.pattern(bytes)
        case .amqp: Self.amqp(bytes)
        }
    }

    static func envelope(_ bytes: UnsafeBufferPointer<UInt8>) {
        var body = ByteBuffer()
        body.writeBytes(bytes)
        let json = BasicProperties(contentType: "application/json")
        guard case .translated(let envelope) = EnvelopeAMQPMapping.incoming(
            body: body, properties: json, routingKey: "fuzz.key", nowMilliseconds: 1, newID: { "id" })
        else { fatalError("a foreign message was passed through") }
        let encoded = envelope.encoded()
        guard let reparsed = try? JSONParser.parse(encoded), reparsed["route"]?.stringValue == "fuzz.key" else {
            fatalError("the envelope encoder wrote JSON its own parser rejects: \(String(decoding: encoded, as: UTF8.self))")
        }
        // The validator stands in for the parser where Warren's own bodies are passed through
        // untouched: it must agree with it, and under Warren's mark only JSON may pass.
        let parses = (try? JSONParser.parse(bytes)) != nil
        if JSONValidator.isValid(UnsafeRawBufferPointer(bytes)) != parses {
            fatalError("the validator says \(!parses) where the parser says \(parses): \(Array(bytes))")
        }
        let marked = BasicProperties(contentType: "application/json", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e",
                                     appID: EnvelopeAMQPMapping.appID)
        if case .passthrough = EnvelopeAMQPMapping.incoming(body: body, properties: marked, routingKey: "fuzz.key",
                                                            nowMilliseconds: 1, newID: { "id" }), !parses {
            fatalError("a body under Warren's mark that is not JSON was passed through: \(Array(bytes))")
        }
    }

    static func pattern(_ bytes: UnsafeBufferPointer<UInt8>) {
        // First line: a pattern; second: a key; third: another pattern.
        let parts = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 2, omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
        guard let pattern = try? TopicPattern(parts[0]) else { return }
        if parts.count > 1 {
            // A route's class is read on the raw key's bytes: it must agree with a parsed key.
            let key = try? RouteKey(parts[1])
            let classed = RouteClassifier([.init(name: "c", pattern: pattern)]).classIndex(parts[1]) == 0
            if classed != (key.map(pattern.matches) ?? false) {
                fatalError("\(pattern) classes \(parts[1]) as \(classed) but the parsed key says otherwise")
            }
        }
        if parts.count > 2, let other = try? TopicPattern(parts[2]) {
            // Containment must be consistent with matching: if pattern ⊆ other, any key that
            // pattern matches, other matches too.
            if pattern.isContained(in: other), parts.count > 1, let key = try? RouteKey(parts[1]),
               pattern.matches(key), !other.matches(key) {
                fatalError("\(pattern) ⊆ \(other) but \(key) matches only the first")
            }
        }
    }

    static func amqp(_ bytes: UnsafeBufferPointer<UInt8>) {
        // The first byte picks the split points, so partial frames are exercised too.
        guard let first = bytes.first else { return }
        let step = Int(first % 16) + 1
        var buffer = ByteBuffer()
        var offset = 1
        while offset < bytes.count {
            let end = min(bytes.count, offset + step * 7)
            buffer.writeBytes(UnsafeBufferPointer(rebasing: bytes[offset..<end]))
            offset = end
            while true {
                do {
                    guard let frame = try AMQPFrame.decode(from: &buffer, maxFrameSize: 4096) else { break }
                    if case .method(_, let method) = frame {
                        var out = ByteBuffer()
                        _ = try? AMQPFrame.method(channel: 1, method).encode(into: &out)
                    }
                } catch {
                    return // a typed protocol error: the connection would close with its reply code
                }
            }
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzTarget.selected.run(UnsafeBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's driver, called from the entry point SwiftPM gives executables.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt) -> CInt

/// SwiftPM links an executable target's entry point under this name (it renames `main` so
/// tests can link the target); libFuzzer's own `main` is not used.
@_cdecl("warren_fuzz_main")
public func warrenFuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) }
}

import NIOCore
import WarrenCore

/// Server-Sent Events (the WHATWG `text/event-stream` format) from Warren's frames
/// (docs/protocol.md, "Server-Sent Events"): a `msg` frame becomes an unnamed event whose `id`
/// is the envelope's id and whose data is the envelope, so an `EventSource` hands the envelope
/// to `onmessage` and reconnects with `Last-Event-ID` = the last id it got; any other frame
/// (`subscribed`, `error`) becomes an event named `control` with the frame as its data.
///
/// A data line ends at CR or LF, so text holding one is split into several `data:` lines (an
/// `EventSource` joins them with LF: the same JSON). Warren's own encoder never writes a raw
/// line break, but an envelope passed through from another publisher is not trusted to be
/// free of one: unsplit, it would end the event early and let its bytes forge another.
enum EventStreamEncoding {
    /// What the stream begins with: how long an `EventSource` waits before reconnecting (ms).
    static func preamble(retryMilliseconds: Int) -> ByteBuffer {
        ByteBuffer(string: "retry: \(retryMilliseconds)\n\n")
    }

    /// A comment: keeps proxies from timing the stream out, and tells a dead peer by its write.
    static let heartbeat = ByteBuffer(string: ":\n\n")

    /// The event for a frame from the session: a message, or a control frame.
    static func event(_ frame: ByteBuffer) -> ByteBuffer {
        if let (id, envelope) = message(frame) {
            var out = ByteBuffer()
            out.reserveCapacity(envelope.readableBytes + 64)
            if let id, !id.utf8.contains(where: { $0 == 10 || $0 == 13 || $0 == 0 }) {
                out.writeStaticString("id: ")
                out.writeString(id)
                out.writeStaticString("\n")
            }
            writeData(envelope, into: &out)
            return out
        }
        var out = ByteBuffer()
        out.reserveCapacity(frame.readableBytes + 24)
        out.writeStaticString("event: control\n")
        writeData(frame, into: &out)
        return out
    }

    /// `data: …` lines for `bytes`, and the blank line that ends the event.
    static func writeData(_ bytes: ByteBuffer, into out: inout ByteBuffer) {
        bytes.withUnsafeReadableBytes { raw in
            var start = 0
            var i = 0
            while i <= raw.count {
                if i == raw.count || raw[i] == 10 || raw[i] == 13 {
                    out.writeStaticString("data: ")
                    out.writeBytes(UnsafeRawBufferPointer(rebasing: raw[start..<i]))
                    out.writeStaticString("\n")
                    // CRLF is one line break.
                    if i < raw.count, raw[i] == 13, i + 1 < raw.count, raw[i + 1] == 10 { i += 1 }
                    start = i + 1
                }
                i += 1
            }
        }
        out.writeStaticString("\n")
    }

    /// A `msg` frame's envelope id (nil when it has none) and envelope bytes; nil for any other frame.
    static func message(_ frame: ByteBuffer) -> (id: String?, envelope: ByteBuffer)? {
        let prefix = ServerFrame.messagePrefix
        guard frame.readableBytes > prefix.utf8CodeUnitCount,
              frame.withUnsafeReadableBytes({ $0.starts(with: UnsafeRawBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)) })
        else { return nil }
        guard let json = try? JSONParser.parse(frame.readableBytesView), let envelope = json["env"] else { return nil }
        // The envelope's bytes as they are in the frame: after `"env":`, up to the frame's last `}`
        // (or `,"redelivered":true}`).
        let marker = Array(",\"env\":".utf8)
        let bytes = frame.readableBytesView
        guard let start = bytes.firstRange(of: marker)?.upperBound else { return nil }
        var end = bytes.endIndex - 1
        let redelivered = Array(",\"redelivered\":true}".utf8)
        if bytes.reversed().starts(with: redelivered.reversed()) { end = bytes.endIndex - redelivered.count }
        // The view's indices are the buffer's own.
        guard end > start, let slice = frame.getSlice(at: start, length: end - start) else { return nil }
        return (envelope["id"]?.stringValue, slice)
    }
}

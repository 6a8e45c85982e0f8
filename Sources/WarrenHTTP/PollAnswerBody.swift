import NIOCore
import WarrenCore

/// The JSON of a poll answer (DESIGN §5): `{"messages":[{"sub":…,"env":…},…],"cursor":…}`.
/// Each item is its `msg` frame after `{"op":"msg",`: the bytes built once for the message.
enum PollAnswerBody {
    static func make(_ items: [PollItem], cursor: String) -> ByteBuffer {
        var body = ByteBuffer()
        body.reserveCapacity(64 + cursor.utf8.count + items.reduce(0) { $0 + $1.frame.readableBytes })
        body.writeStaticString("{\"messages\":[")
        for (k, item) in items.enumerated() {
            body.writeStaticString(k == 0 ? "{" : ",{")
            body.writeImmutableBuffer(item.answerTail)
        }
        var w = JSONWriter()
        w.raw("],\"cursor\":")
        w.string(cursor)
        w.raw("}")
        body.writeBytes(w.bytes)
        return body
    }
}

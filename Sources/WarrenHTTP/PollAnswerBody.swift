import NIOCore
import WarrenCore

/// The JSON of a poll answer (DESIGN §5): `{"messages":[{"sub":…,"env":…},…],"cursor":…}`.
/// Each item is its `msg` frame after `{"op":"msg",`: the bytes built once for the message.
enum PollAnswerBody {
    static func make(_ items: [PollItem], cursor: String) -> ByteBuffer {
        var body = ByteBuffer()
        let cursorJSON = json(cursor)
        body.reserveCapacity(length(items, cursorJSON: cursorJSON))
        write(items, cursorJSON: cursorJSON, to: &body)
        return body
    }

    /// The whole HTTP/1.1 response, head and body in one buffer (the poll path's one write).
    static func response(_ items: [PollItem], cursor: String) -> ByteBuffer {
        let cursorJSON = json(cursor)
        let length = length(items, cursorJSON: cursorJSON)
        var out = PollConnectionHandler.responseHead(status: 200, length: length, close: false, reserving: length)
        write(items, cursorJSON: cursorJSON, to: &out)
        return out
    }

    private static func json(_ cursor: String) -> [UInt8] {
        var w = JSONWriter()
        w.string(cursor)
        return w.bytes
    }

    private static func length(_ items: [PollItem], cursorJSON: [UInt8]) -> Int {
        // {"messages":[ … ],"cursor": … }
        var n = 13 + 11 + cursorJSON.count + 1
        for (k, item) in items.enumerated() { n += (k == 0 ? 1 : 2) + item.answerTailLength }
        return n
    }

    private static func write(_ items: [PollItem], cursorJSON: [UInt8], to body: inout ByteBuffer) {
        body.writeStaticString("{\"messages\":[")
        for (k, item) in items.enumerated() {
            body.writeStaticString(k == 0 ? "{" : ",{")
            item.writeAnswerTail(to: &body)
        }
        body.writeStaticString("],\"cursor\":")
        body.writeBytes(cursorJSON)
        body.writeStaticString("}")
    }
}

import NIOCore
import WarrenCore

/// The JSON of a poll answer (DESIGN §5): `{"messages":[{"sub":…,"env":…},…],"cursor":…}`,
/// with `"more":true` after the cursor when the session held more than the answer carries.
/// Each item is its `msg` frame after `{"op":"msg",`: the bytes built once for the message.
enum PollAnswerBody {
    static func make(_ answer: PollAnswer) -> ByteBuffer {
        var body = ByteBuffer()
        let cursorJSON = json(answer.cursor)
        body.reserveCapacity(length(answer, cursorJSON: cursorJSON))
        write(answer, cursorJSON: cursorJSON, to: &body)
        return body
    }

    /// The whole HTTP/1.1 response, head and body in one buffer (the poll path's one write).
    static func response(_ answer: PollAnswer) -> ByteBuffer {
        let cursorJSON = json(answer.cursor)
        let length = length(answer, cursorJSON: cursorJSON)
        var out = PollConnectionHandler.responseHead(status: 200, length: length, close: false, reserving: length)
        write(answer, cursorJSON: cursorJSON, to: &out)
        return out
    }

    private static func json(_ cursor: String) -> [UInt8] {
        var w = JSONWriter()
        w.string(cursor)
        return w.bytes
    }

    private static func length(_ answer: PollAnswer, cursorJSON: [UInt8]) -> Int {
        // {"messages":[ … ],"cursor": … ,"more":true}
        var n = 13 + 11 + cursorJSON.count + (answer.more ? 12 : 0) + 1
        for (k, item) in answer.messages.enumerated() { n += (k == 0 ? 1 : 2) + item.answerTailLength }
        return n
    }

    private static func write(_ answer: PollAnswer, cursorJSON: [UInt8], to body: inout ByteBuffer) {
        body.writeStaticString("{\"messages\":[")
        for (k, item) in answer.messages.enumerated() {
            body.writeStaticString(k == 0 ? "{" : ",{")
            item.writeAnswerTail(to: &body)
        }
        body.writeStaticString("],\"cursor\":")
        body.writeBytes(cursorJSON)
        if answer.more { body.writeStaticString(",\"more\":true") }
        body.writeStaticString("}")
    }
}

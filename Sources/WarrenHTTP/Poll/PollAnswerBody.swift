import NIOCore
import WarrenCore

/// The JSON of a poll answer (docs/protocol.md): `{"messages":[{"sub":…,"env":…},…],"cursor":…}`,
/// with `"more":true` after the cursor when the session held more than the answer carries.
/// Each item is its `msg` frame after `{"op":"msg",`: the bytes built once for the message.
enum PollAnswerBody {
    /// The whole HTTP/1.1 response, head and body in one buffer (the poll path's one write);
    /// `extra`: header lines (CORS).
    static func response(_ answer: PollAnswer, close: Bool, extra: String? = nil) -> ByteBuffer {
        let escaped = escapedCursor(answer)
        let length = length(answer, escapedCursor: escaped)
        var out = ResponseHead.json(status: 200, length: length, close: close, extra: extra, reserving: length)
        write(answer, escapedCursor: escaped, to: &out)
        return out
    }

    /// The cursor's JSON string when its node needs escaping; nil, as for every node id (a
    /// word), when it is written as it is: `"<node>.<sequence>"`.
    private static func escapedCursor(_ answer: PollAnswer) -> [UInt8]? {
        guard answer.node.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 >= 0x7F })
        else { return nil }
        var w = JSONWriter()
        w.string(answer.cursor)
        return w.bytes
    }

    private static func length(_ answer: PollAnswer, escapedCursor: [UInt8]?) -> Int {
        // {"messages":[ … ],"cursor": … ,"more":true}
        let cursor = escapedCursor?.count ?? answer.node.utf8.count + 3 + ResponseHead.decimalDigits(answer.sequence)
        var n = 13 + 11 + cursor + (answer.more ? 12 : 0) + 1
        // By index: an item bound by `for` is a copy (a retain and a release of its frame's storage).
        for k in answer.messages.indices { n += (k == 0 ? 1 : 2) + answer.messages[k].answerTailLength }
        return n
    }

    private static func write(_ answer: PollAnswer, escapedCursor: [UInt8]?, to body: inout ByteBuffer) {
        body.writeStaticString("{\"messages\":[")
        for k in answer.messages.indices {
            body.writeStaticString(k == 0 ? "{" : ",{")
            answer.messages[k].writeAnswerTail(to: &body)
        }
        body.writeStaticString("],\"cursor\":")
        if let escapedCursor {
            body.writeBytes(escapedCursor)
        } else {
            body.writeStaticString("\"")
            body.writeString(answer.node)
            body.writeStaticString(".")
            ResponseHead.writeDecimal(answer.sequence, to: &body)
            body.writeStaticString("\"")
        }
        if answer.more { body.writeStaticString(",\"more\":true") }
        body.writeStaticString("}")
    }
}

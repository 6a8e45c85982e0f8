/// The JSON of the store's answers (docs/protocol.md): WebSocket frames and HTTP bodies carry the same
/// members; stored envelopes are copied in as they were kept, never re-encoded.
public enum StoreAnswer {
    /// `{"op":"history","id":…,"route":…,"messages":[…],"more":…}`
    public static func historyFrame(ref: String, route: String, page: HistoryPage) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.raw("{\"op\":\"history\",\"id\":")
        w.string(ref)
        w.raw(",")
        history(&w, route: route, page: page)
        return w.bytes
    }

    /// `{"route":…,"messages":[…],"more":…}`
    public static func historyBody(route: String, page: HistoryPage) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.raw("{")
        history(&w, route: route, page: page)
        return w.bytes
    }

    /// `{"op":"conversations","id":…,"conversations":[…]}`
    public static func conversationsFrame(ref: String, list: [ConversationSummary]) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.raw("{\"op\":\"conversations\",\"id\":")
        w.string(ref)
        w.raw(",")
        conversations(&w, list)
        return w.bytes
    }

    /// `{"conversations":[{"route":…,"last":env,"unread":3,"read":…},…]}`
    public static func conversationsBody(_ list: [ConversationSummary]) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.raw("{")
        conversations(&w, list)
        return w.bytes
    }

    /// `{"op":"read","route":…,"id":…}`: the marker as it stands.
    public static func readFrame(route: String, marker: String) -> [UInt8] {
        var w = JSONWriter(capacity: 96)
        w.raw("{\"op\":\"read\",\"route\":")
        w.string(route)
        w.raw(",\"id\":")
        w.string(marker)
        w.raw("}")
        return w.bytes
    }

    private static func history(_ w: inout JSONWriter, route: String, page: HistoryPage) {
        w.raw("\"route\":")
        w.string(route)
        w.raw(",\"messages\":[")
        for (k, m) in page.messages.enumerated() {
            if k > 0 { w.raw(",") }
            w.json(m.envelope.utf8)
        }
        w.raw("],\"more\":")
        w.raw(page.more ? "true" : "false")
        w.raw("}")
    }

    private static func conversations(_ w: inout JSONWriter, _ list: [ConversationSummary]) {
        w.raw("\"conversations\":[")
        for (k, c) in list.enumerated() {
            if k > 0 { w.raw(",") }
            w.raw("{\"route\":")
            w.string(c.route)
            w.raw(",\"last\":")
            w.json(c.last.envelope.utf8)
            w.raw(",\"unread\":")
            w.int(Int64(c.unread))
            w.raw(",\"read\":")
            if let read = c.read { w.string(read) } else { w.raw("null") }
            w.raw("}")
        }
        w.raw("]}")
    }
}

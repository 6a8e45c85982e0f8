/// Frames Warren sends to WebSocket clients, encoded straight to bytes.
public enum ServerFrame {
    /// How every `msg` frame begins (a poll answer's items are the rest of it after `{`).
    public static let messagePrefix: StaticString = "{\"op\":\"msg\","

    /// `start`: how a `since` went (`recovered`, and `reason` when not) and where a live
    /// subscription starts (`at`).
    public static func subscribed(id: String, pattern: String, mode: SubscriptionMode, start: SubscriptionStart = SubscriptionStart()) -> [UInt8] {
        var w = JSONWriter(capacity: 96)
        w.raw("{\"op\":\"subscribed\",\"id\":")
        w.string(id)
        w.raw(",\"pattern\":")
        w.string(pattern)
        w.raw(",\"mode\":")
        w.string(mode.rawValue)
        if let at = start.at {
            w.raw(",\"at\":")
            w.string(at)
        }
        if let recovery = start.recovery {
            w.raw(recovery.recovered ? ",\"recovered\":true" : ",\"recovered\":false,\"reason\":")
            if let reason = recovery.failure { w.string(reason.rawValue) }
        }
        w.raw("}")
        return w.bytes
    }

    public static func unsubscribed(id: String) -> [UInt8] {
        var w = JSONWriter(capacity: 48)
        w.raw("{\"op\":\"unsubscribed\",\"id\":")
        w.string(id)
        w.raw("}")
        return w.bytes
    }

    /// `puback` with `id` for a single route, `ids` for a multicast.
    public static func puback(cid: String?, ids: [String], multicast: Bool) -> [UInt8] {
        var w = JSONWriter(capacity: 96)
        w.raw("{\"op\":\"puback\"")
        if let cid {
            w.raw(",\"cid\":")
            w.string(cid)
        }
        if multicast {
            w.raw(",\"ids\":")
            w.strings(ids)
            w.raw("}")
        } else {
            w.raw(",\"id\":")
            w.string(ids.first ?? "")
            w.raw("}")
        }
        return w.bytes
    }

    public static func error(_ e: ProtocolError) -> [UInt8] {
        var w = JSONWriter(capacity: 128)
        w.raw("{\"op\":\"error\",\"code\":")
        w.string(e.code.rawValue)
        w.raw(",\"message\":")
        w.string(e.message)
        if let ref = e.ref {
            w.raw(",\"ref\":")
            w.string(ref)
        }
        w.raw("}")
        return w.bytes
    }

    /// `{"op":"presence","id":…,"route":…,"users":[…]}`
    public static func presence(ref: String, route: String, users: [String]) -> [UInt8] {
        var w = JSONWriter(capacity: 64 + users.count * 16)
        w.raw("{\"op\":\"presence\",\"id\":")
        w.string(ref)
        w.raw(",")
        presenceMembers(&w, route: route, users: users)
        return w.bytes
    }

    /// `{"route":…,"users":[…]}` (`GET /v1/presence`).
    public static func presenceBody(route: String, users: [String]) -> [UInt8] {
        var w = JSONWriter(capacity: 64 + users.count * 16)
        w.raw("{")
        presenceMembers(&w, route: route, users: users)
        return w.bytes
    }

    private static func presenceMembers(_ w: inout JSONWriter, route: String, users: [String]) {
        w.raw("\"route\":")
        w.string(route)
        w.raw(",\"users\":")
        w.strings(users)
        w.raw("}")
    }

    public static let pong: [UInt8] = Array(#"{"op":"pong"}"#.utf8)

    /// `{"op":"msg","sub":…,"env":…}` around already-encoded envelope bytes (never re-encoded).
    public static func message(sub: String, envelope: some Collection<UInt8>, redelivered: Bool) -> [UInt8] {
        var w = JSONWriter(capacity: envelope.count + sub.utf8.count + 48)
        w.raw(messagePrefix)
        w.raw("\"sub\":")
        w.string(sub)
        w.raw(",\"env\":")
        var bytes = w.bytes
        bytes.append(contentsOf: envelope)
        if redelivered {
            bytes.append(contentsOf: Array(",\"redelivered\":true}".utf8))
        } else {
            bytes.append(UInt8(ascii: "}"))
        }
        return bytes
    }
}

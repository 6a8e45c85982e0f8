/// What a client asks to publish, before Warren stamps it.
public struct PublishRequest: Sendable, Equatable {
    public var routes: [RouteKey]
    /// True when the client used `routes` (the answer then carries `ids`).
    public var multicast: Bool
    public var type: String
    public var body: JSONValue
    public var cid: String?
    public var transient: Bool
    public var headers: [(key: String, value: String)]

    public static func == (a: PublishRequest, b: PublishRequest) -> Bool {
        a.routes == b.routes && a.multicast == b.multicast && a.type == b.type && a.body == b.body && a.cid == b.cid
            && a.transient == b.transient && a.headers.count == b.headers.count && zip(a.headers, b.headers).allSatisfy { $0 == $1 }
    }

    /// Reads `route` / `routes`, `type`, `body`, `cid`, `transient`, `headers` from a JSON object.
    /// `id`, `ts`, `from`, `via`, `v` and unknown fields are ignored: Warren stamps those itself.
    public static func parse(_ json: JSONValue, maxRoutes: Int = 16) throws(ProtocolError) -> PublishRequest {
        let cid = try optionalString(json, "cid")
        guard cid.map(Envelope.isValidCID) ?? true else { throw ProtocolError(.badFrame, "cid must be 1-64 bytes", ref: nil) }
        let ref = cid
        var routes: [RouteKey] = []
        var multicast = false
        if let list = json["routes"] {
            // Which of the two was meant is not for Warren to guess.
            guard json["route"] == nil || json["route"] == .null else {
                throw ProtocolError(.badFrame, "give route or routes, not both", ref: ref)
            }
            guard case .array(let items) = list, !items.isEmpty, items.count <= maxRoutes else {
                throw ProtocolError(.badFrame, "routes must be a list of 1-\(maxRoutes) routes", ref: ref)
            }
            multicast = true
            for item in items {
                guard case .string(let s) = item else { throw ProtocolError(.badFrame, "routes must be strings", ref: ref) }
                let route: RouteKey
                do { route = try RouteKey(s) } catch { throw ProtocolError(.badRoute, error.description, ref: ref) }
                // The same message twice to one conversation is a client's mistake, not a wish.
                guard !routes.contains(route) else { throw ProtocolError(.badFrame, "routes must differ: \(s) is given twice", ref: ref) }
                routes.append(route)
            }
        } else if let single = json["route"] {
            guard case .string(let s) = single else { throw ProtocolError(.badFrame, "route must be a string", ref: ref) }
            do { routes.append(try RouteKey(s)) } catch { throw ProtocolError(.badRoute, error.description, ref: ref) }
        } else {
            throw ProtocolError(.badFrame, "pub needs route or routes", ref: ref)
        }
        let type = try optionalString(json, "type", ref: ref) ?? "text"
        guard Envelope.isValidType(type) else { throw ProtocolError(.badFrame, "type must be 1-64 bytes of [A-Za-z0-9_:-]", ref: ref) }
        var transient = false
        if let t = json["transient"], t != .null {
            guard case .bool(let b) = t else { throw ProtocolError(.badFrame, "transient must be true or false", ref: ref) }
            transient = b
        }
        let headers: [(key: String, value: String)]
        do { headers = try Envelope.parseHeaders(json["headers"]) } catch {
            throw ProtocolError(.badFrame, error.description, ref: ref)
        }
        return PublishRequest(routes: routes, multicast: multicast, type: type, body: json["body"] ?? .null, cid: cid,
                              transient: transient, headers: headers)
    }
}

import Foundation

extension WarrenClient {
    // MARK: publishing

    /// Publishes `body` to `route`; returns the envelope id once the broker confirmed. Kept, with
    /// its `cid`, until then: resent after a reconnect, published once.
    public func publish(_ route: String, _ body: JSONValue, type: String = "text", headers: [String: String]? = nil,
                        transient: Bool = false, cid: String? = nil) async throws -> String {
        let ids = try await send(route: route, routes: nil, body, type: type, headers: headers, transient: transient, cid: cid)
        return ids.first ?? ""
    }

    /// Publishes to several routes, all or none; one id per route.
    public func publish(routes: [String], _ body: JSONValue, type: String = "text", headers: [String: String]? = nil,
                        transient: Bool = false, cid: String? = nil) async throws -> [String] {
        try await send(route: nil, routes: routes, body, type: type, headers: headers, transient: transient, cid: cid)
    }

    func send(route: String?, routes: [String]?, _ body: JSONValue, type: String, headers: [String: String]?,
                      transient: Bool, cid: String?) async throws -> [String] {
        guard !closed else { throw closedError }
        counter += 1
        let frame = Wire.Pub(route: route, routes: routes, type: type, body: body, cid: cid ?? "\(prefix)-\(counter)",
                             headers: headers, transient: transient ? true : nil)
        // One publish per cid at a time: a second would take the first one's answer.
        guard pending[frame.cid] == nil else { throw WarrenError("conflict", "a publish with cid \(frame.cid) is still unanswered") }
        return try await withCheckedThrowingContinuation { c in
            pending[frame.cid] = Pending(frame: frame, continuation: c)
            sendPublish(frame.cid)
        }
    }

    func sendPublish(_ cid: String) {
        guard !closed, var p = pending[cid], p.sending == nil else { return }
        if let socket {
            p.sending = .webSocket
            pending[cid] = p
            socket.send(Wire.encode(p.frame))
        } else if pollOpen {
            p.sending = .polling
            pending[cid] = p
            Task { await self.postPublish(cid) }
        }
    }

    /// `POST /v1/messages`, repeated with the same cid until answered.
    func postPublish(_ cid: String) async {
        var refreshed = false
        while !closed, let p = pending[cid] {
            var body = p.frame
            body.op = nil
            do {
                let answer = try await http.send("POST", "/v1/messages", body: body, token: token, user: configuration.user,
                                                 as: Wire.Published.self)
                return resolve(cid, answer.ids ?? answer.id.map { [$0] } ?? [])
            } catch let e as WarrenError {
                if e.status == 401, !refreshed, await refreshToken() {
                    refreshed = true
                    continue
                }
                guard ["unavailable", "rate_limited", "internal"].contains(e.code) else {
                    pending.removeValue(forKey: cid)?.continuation.resume(throwing: e)
                    return
                }
            } catch {
                pending[cid]?.sending = nil
                return
            }
            try? await Task.sleep(for: .milliseconds(Int.random(in: 500...1500)))
            if socket != nil {
                pending[cid]?.sending = nil
                return sendPublish(cid)
            }
        }
    }

    func resolve(_ cid: String, _ ids: [String]) {
        pending.removeValue(forKey: cid)?.continuation.resume(returning: ids)
    }
}

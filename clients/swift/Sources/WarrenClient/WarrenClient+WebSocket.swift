import Foundation

extension WarrenClient {
    // MARK: WebSocket

    /// Runs a WebSocket (`already` open, or opened now); `left`, the poll session it replaces, is
    /// drained once the socket's subscriptions are in effect, so that the move misses nothing.
    func openWebSocket() async throws -> WebSocketConnection {
        try await WebSocketConnection.connect(to: webSocketURL(), heartbeat: configuration.heartbeat, timeout: configuration.timeout)
    }

    func runWebSocket(_ already: WebSocketConnection?, handover left: LeftSession? = nil) async -> Outcome {
        handover = left
        if left != nil, heldLive == nil { heldLive = [] }
        defer {
            // The socket ended before its subscriptions were all in effect: what the session holds is still handed on.
            if let left = handover {
                handover = nil
                Task { await self.drain(left, releasing: true) }
            }
        }
        let ws: WebSocketConnection
        if let already {
            ws = already
        } else {
            do {
                ws = try await openWebSocket()
            } catch let e as WarrenError {
                return Outcome(opened: false, unauthorized: e.status == 401)
            } catch {
                return Outcome(opened: false)
            }
        }
        if closed {
            ws.close()
            return Outcome(opened: false)
        }
        epoch += 1
        let mine = epoch
        socket = ws
        resubscribing = Set(subscriptions.keys)
        for id in subscriptions.keys { ws.send(Wire.encode(subFrame(id))) }
        for cid in pending.keys { sendPublish(cid) }
        resubscribed(nil)
        var code: UInt16?
        for await event in ws.events {
            switch event {
            case .text(let text): handle(text, epoch: mine)
            case .closed(let c): code = c
            }
        }
        if socket === ws {
            socket = nil
            resubscribing = nil
        }
        // What went over this socket gets no answer now: sent again. A POST in flight keeps going.
        for cid in pending.keys where pending[cid]?.sending == .webSocket { pending[cid]?.sending = nil }
        switch code {
        case 4401: return Outcome(opened: true, unauthorized: true)
        case 1008: return Outcome(opened: true, fatal: WarrenError("forbidden", "closed by Warren with 1008 (policy)"))
        default: return Outcome(opened: true)
        }
    }

    /// Subscription `id` answered; the last one answered after a (re)connect opens the client.
    func resubscribed(_ id: String?) {
        guard var waiting = resubscribing else { return }
        if let id { waiting.remove(id) }
        resubscribing = waiting
        guard waiting.isEmpty else { return }
        resubscribing = nil
        if let left = handover {
            handover = nil
            Task { await self.drain(left, releasing: true) }
        }
        openedAs(.webSocket)
    }

    /// A frame from Warren.
    func handle(_ text: String, epoch: Int) {
        guard let f = try? JSONDecoder().decode(Wire.ServerFrame.self, from: Data(text.utf8)) else {
            // Not a frame of docs/protocol.md (a proxy's page, a broken peer): said, and the socket goes on.
            errorContinuation.yield(WarrenError("bad_response", "a WebSocket frame that is not one of Warren's: \(text.prefix(80))"))
            return
        }
        switch f.op {
        case "msg":
            if let sub = f.sub, let env = f.env { deliver(sub, env, redelivered: f.redelivered ?? false, epoch: epoch, fromSocket: true) }
        case "subscribed":
            if let id = f.id {
                started(id, at: f.at, recovered: f.recovered, reason: f.reason)
                settle(id, nil)
                resubscribed(id)
            }
        case "puback":
            if let cid = f.cid { resolve(cid, f.ids ?? f.id.map { [$0] } ?? []) }
        case "error":
            let error = WarrenError(f.code ?? "internal", f.message ?? "", ref: f.ref)
            if let ref = f.ref, pending[ref] != nil {
                pending[ref]?.sending = nil
                if error.code == "unavailable" || error.code == "rate_limited" {
                    // Not published: tried again shortly, with the same cid.
                    Task {
                        try? await Task.sleep(for: .milliseconds(Int.random(in: 500...1000)))
                        self.sendPublish(ref)
                    }
                } else {
                    pending.removeValue(forKey: ref)?.continuation.resume(throwing: error)
                }
            } else if let ref = f.ref, let entry = subscriptions[ref] {
                resubscribed(ref)
                if entry.ready, error.code == "unavailable" || error.code == "rate_limited" {
                    // A subscription the node cannot serve right now (a resubscription it cannot
                    // take yet, an inbox queue deleted on the broker): said, and asked for again shortly.
                    errorContinuation.yield(error)
                    let asked = self.epoch
                    Task {
                        try? await Task.sleep(for: .milliseconds(Int.random(in: 500...1000)))
                        self.resendSubscription(ref, epoch: asked)
                    }
                } else {
                    // Refused (a refreshed token's claim no longer allows it): it goes, with an
                    // error when it was in effect, as on the polling door.
                    settle(ref, error)
                    if entry.ready { errorContinuation.yield(error) }
                }
            } else {
                errorContinuation.yield(error)
            }
        default:
            break
        }
    }
}

import Foundation

/// Poll sessions left for a new one or for the WebSocket: drained, then deleted.
extension WarrenClient {
    /// Takes what a session being left still holds — its live deliveries are handed on (the
    /// inbox ones go back to their queue when it is deleted, and come again in the new session
    /// or on the socket) — acking its cursor with it, then deletes it. Its long-poll in flight
    /// was answered by the first delivery after it parked, or is answered by the delete (with
    /// nothing, it was parked on an empty buffer): either way it holds the oldest, handed on first
    /// — unless the drain's first poll reached Warren before it did; the answers are handed on
    /// in the order Warren made them (``Wire/PollAnswer/inOrderMade(_:)``).
    /// `releasing`: then the socket's live deliveries held meanwhile are handed on.
    func drain(_ old: LeftSession, releasing: Bool = false) async {
        let (token, user) = (self.token, configuration.user)
        var answers: [Wire.PollAnswer] = []
        var ack = old.cursor  // acked with the first drain poll only: the drain hands on no inbox delivery
        for _ in 0..<Self.drainRounds {
            var query = [URLQueryItem(name: "wait", value: "0"), URLQueryItem(name: "max", value: "1000")]
            if let cursor = ack { query.append(URLQueryItem(name: "ack", value: cursor)) }
            ack = nil
            guard let answer = try? await http.send("GET", old.path, query: query, token: token, user: user, as: Wire.PollAnswer.self)
            else { break }
            answers.append(answer)
            if answer.more != true { break }
        }
        do {
            _ = try await http.send("DELETE", old.path, token: token, user: user, as: NoAnswer.self)
        } catch let error as WarrenError where error.status == nil {
            dropSession(old.path, cursor: nil)  // not reached: sent again in the background
        } catch {}
        // Parked there, the delete answered it, and one arriving after the delete is a 404; if the
        // delete did not get through, it would wait out its `wait`: given up on after a moment.
        if let inFlight = old.inFlight, await answered(inFlight, within: .seconds(2)), let first = try? await inFlight.value {
            answers.insert(first, at: 0)
        }
        for item in Wire.PollAnswer.inOrderMade(answers).flatMap(\.messages) {
            deliver(item.sub, item.env, redelivered: item.redelivered ?? false, epoch: epoch, onlyLive: true)
        }
        if releasing, let held = heldLive {
            heldLive = nil
            for item in held { deliver(item.subscription, item.env, redelivered: false, epoch: item.epoch) }
        }
    }

    /// Drops a session left with nothing to take over from it: its cursor acked and the session
    /// deleted, in the background (the delete ends its long-poll in flight, if any).
    func drop(_ left: LeftSession) {
        dropSession(left.path, cursor: left.cursor)
    }

    /// Acks `cursor` if given, then deletes the session, in the background; each sent again (6
    /// tries over ~8 s: 0.25, 0.5, 1, 2, 4 s apart) while Warren cannot be reached: a delete that
    /// never arrives leaves the session holding its subscriptions, its user present, until
    /// `poll.session_ttl` (a balancer's dead node took every other request).
    func dropSession(_ path: String, cursor: String?) {
        let (http, token, user) = (self.http, self.token, configuration.user)
        Task {
            func again(_ request: @Sendable () async throws -> Void) async {
                for attempt in 0..<6 {
                    do {
                        return try await request()
                    } catch let error as WarrenError where error.status == nil && attempt < 5 {
                        try? await Task.sleep(for: .milliseconds(250 << attempt))
                    } catch {
                        return
                    }
                }
            }
            if let cursor {
                await again {
                    _ = try await http.send("POST", path + "/ack", body: Wire.Cursor(cursor: cursor), token: token, user: user,
                                            as: NoAnswer.self)
                }
            }
            await again { _ = try await http.send("DELETE", path, token: token, user: user, as: NoAnswer.self) }
        }
    }

    func openedPolling() {
        pollOpen = true
        openedAs(.polling)
        scheduleProbe()
        // Not a second POST beside one still in flight (its answer decides): on a node other than
        // the first's, the two could both be published (a balancer without stickiness; until
        // 2026-11-29 every poll session opened again sent a second).
        for cid in pending.keys {
            if pending[cid]?.sending != .polling { pending[cid]?.sending = nil }
            sendPublish(cid)
        }
    }
}

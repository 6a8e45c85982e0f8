import Foundation

extension WarrenClient {
    // MARK: long-polling

    func restartPolling() {
        pollRestart = true
        interruptPoll()
        resumePollAcked()
    }

    func resumePollAcked() {
        pollAcked?.resume()
        pollAcked = nil
    }

    /// While polling, tries the WebSocket at `pollNextProbe` and every `retryWebSocketAfter`
    /// after, in the background (a parked poll does not delay it); one that opens interrupts
    /// polling, which hands over to it.
    func scheduleProbe() {
        guard configuration.transports.contains(.webSocket), !pollProbing, pollOpen, !closed else { return }
        pollProbing = true
        let due = pollNextProbe
        Task {
            try? await Task.sleep(until: due)
            let ws = self.probeIsWanted() ? try? await self.openWebSocket() : nil
            self.probed(ws)
        }
    }

    func probeIsWanted() -> Bool { pollOpen && !closed && pollSwitchTo == nil }

    func probed(_ ws: WebSocketConnection?) {
        pollProbing = false
        pollNextProbe = .now + configuration.retryWebSocketAfter
        guard let ws else { return scheduleProbe() }
        guard probeIsWanted() else { return ws.close() }
        pollSwitchTo = ws
        interruptPoll()
        resumePollAcked()
    }

    /// Ends what polling waits for: a restart, a probe that opened, or the close.
    func interruptPoll() {
        pollInterrupt?()
        if let pollWait { endWait(pollWait, answered: false) }
    }

    /// Waits for `request` to answer: true once it did, false when `limit` passed first or, if
    /// `interruptible` (the long-poll in flight), when ``restartPolling()``, a probe that opened
    /// or ``close()`` came first. The request is never cancelled: it goes on either way.
    func answered(_ request: Task<Wire.PollAnswer, any Error>, within limit: Duration? = nil,
                          interruptible: Bool = false) async -> Bool {
        if interruptible, pollRestart || pollSwitchTo != nil || closed { return false }
        waitSerial += 1
        let serial = waitSerial
        if interruptible { pollWait = serial }
        return await withCheckedContinuation { c in
            waits[serial] = c
            Task {
                _ = await request.result
                self.endWait(serial, answered: true)
            }
            if let limit {
                Task {
                    try? await Task.sleep(for: limit)
                    self.endWait(serial, answered: false)
                }
            }
        }
    }

    func endWait(_ serial: Int, answered: Bool) {
        if pollWait == serial { pollWait = nil }
        waits.removeValue(forKey: serial)?.resume(returning: answered)
    }

    /// Runs `operation` so that ``restartPolling()``, a probe that opened or ``close()`` can interrupt it.
    func interruptibly<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await operation() }
        pollInterrupt = { task.cancel() }
        defer { pollInterrupt = nil }
        if pollRestart || pollSwitchTo != nil || closed { task.cancel() }
        return try await task.value
    }

    /// Poll sessions (a new one whenever the subscriptions change; while there are none, a
    /// session with none, whose long-polls tell Warren going away as any session's do) until
    /// polling fails, the client closes, or a WebSocket opened meanwhile.
    func runPolling(nextProbe: ContinuousClock.Instant) async -> Outcome {
        var opened = false
        pollNextProbe = nextProbe
        pollSwitchTo = nil
        defer { pollOpen = false }
        let user = configuration.user
        // The session left for a new one when the subscriptions changed: kept until the new one
        // is in place, then drained and deleted, so the subscriptions both have miss nothing
        // published in between (a live delivery both had is handed on once).
        var leaving: LeftSession?
        defer { if let leaving { drop(leaving) } }
        while !closed, pollSwitchTo == nil {
            pollRestart = false
            let subs = subscriptions
            let create = Wire.PollCreate(subscriptions: subs.map {
                Wire.PollSubscription(id: $0.key, pattern: $0.value.pattern, mode: $0.value.mode.rawValue, presence: $0.value.presence ? true : nil,
                                      since: $0.value.since)
            }, device: configuration.device)
            let created: Wire.PollSession
            do {
                created = try await http.send("POST", "/v1/poll", body: create, token: token, user: user, as: Wire.PollSession.self)
            } catch let e as WarrenError {
                if e.status == 401 { return Outcome(opened: opened, unauthorized: true) }
                if subs.isEmpty, e.status == 400 {
                    // A Warren before 2026-11-27 refuses a session with no subscriptions, after
                    // checking the credentials and that the node is ready: as good an answer.
                    // Nothing to poll then: wait for a subscription, the close, or the next
                    // WebSocket try.
                    if !opened { opened = true; openedPolling() }
                    _ = try? await interruptibly { try await Task.sleep(for: .seconds(3600)) }
                    continue
                }
                if [400, 403, 404, 413].contains(e.status ?? 0) {
                    // A subscription Warren refuses, named by `ref` (one in effect before and no
                    // longer allowed: a refreshed token's claim): it goes, with an error, and the
                    // rest go on.
                    if let ref = e.ref, let entry = subs[ref] {
                        settle(ref, e)
                        if entry.ready { errorContinuation.yield(e) }
                        continue
                    }
                    // Else (413: one too many for a session string) the ones not yet in effect fail.
                    let fresh = subs.filter { !$0.value.ready }.map(\.key)
                    if fresh.isEmpty { return Outcome(opened: opened, fatal: e) }
                    for id in fresh { settle(id, e) }
                    continue
                }
                return Outcome(opened: opened)
            } catch {
                return Outcome(opened: opened)
            }
            for id in subs.keys {
                started(id, at: created.at?[id], recovered: created.recovered?[id]?.recovered, reason: created.recovered?[id]?.reason)
                settle(id, nil)
            }
            if !opened { opened = true; openedPolling() }
            if let old = leaving {
                leaving = nil
                await drain(old)
            }
            epoch += 1
            let mine = epoch
            let path = Self.sessionPath(created.session)
            // Every poll acks the cursor of the last answer read (the first, the session's own):
            // Warren delivers again what answers after it held, which never arrived.
            var cursor = created.cursor
            var outcome: Outcome?
            var inFlight: Task<Wire.PollAnswer, any Error>?
            let http = self.http
            let wait = configuration.pollWait
            while !closed, !pollRestart, pollSwitchTo == nil {
                var query = [URLQueryItem(name: "wait", value: String(wait))]
                if let cursor { query.append(URLQueryItem(name: "ack", value: cursor)) }
                let token = self.token
                let items = query
                let get = Task {
                    try await http.send("GET", path, query: items, token: token, user: user, as: Wire.PollAnswer.self,
                                        waiting: wait)
                }
                guard await answered(get, interruptible: true) else {
                    inFlight = get  // interrupted: whoever takes the session over takes its answer
                    break
                }
                let answer: Wire.PollAnswer
                do {
                    answer = try await get.value
                } catch let e as WarrenError {
                    if e.status == 401 {
                        outcome = Outcome(opened: opened, unauthorized: true)
                    } else if e.status != 404 {  // a 404: the session ended (expired, its node forgot it): a new one
                        outcome = Outcome(opened: opened)
                    }
                    break
                } catch {
                    break  // no answer (the network): a new session, or the next connection
                }
                cursor = answer.cursor ?? cursor
                for item in answer.messages {
                    deliver(item.sub, item.env, redelivered: item.redelivered ?? false, epoch: mine)
                }
                // Inbox deliveries are acknowledged (with the cursor, on the next poll) once
                // the application moved past them.
                if !pollAwaiting.isEmpty, !closed, !pollRestart, pollSwitchTo == nil {
                    await withCheckedContinuation { pollAcked = $0 }
                }
            }
            // Leaving this session: what was handed out and moved past is acked, the session dropped
            // (once the next one is in place, when the subscriptions changed).
            let finalCursor = pollAwaiting.isEmpty ? cursor : nil
            pollAwaiting = []
            let left = LeftSession(path: path, cursor: finalCursor, inFlight: inFlight)
            if outcome == nil, !closed, pollRestart || pollSwitchTo != nil {
                leaving = left
            } else {
                drop(left)
            }
            if let outcome { return outcome }
        }
        if let next = pollSwitchTo {
            // The session goes once the socket's subscriptions are in effect (``resubscribed(_:)``).
            pollSwitchTo = nil
            defer { leaving = nil }
            return Outcome(opened: opened, switchTo: next, handover: leaving)
        }
        return Outcome(opened: opened)
    }

    /// `/v1/poll/<session>`.
    static func sessionPath(_ session: String) -> String {
        "/v1/poll/" + (session.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? session)
    }

    /// An answer stops at `poll.max_batch` messages or 1 MiB (and carries the session's inbox
    /// deliveries too): a drain polls again while Warren says the session held more, at most
    /// this many times.
    static let drainRounds = 200
}

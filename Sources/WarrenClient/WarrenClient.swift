import Foundation

/// Warren's Swift client (DESIGN §4, §5): the same model as the JavaScript one
/// (`clients/js/warren.js`).
///
/// ```swift
/// let client = await WarrenClient.connect(.init(url: URL(string: "http://127.0.0.1:8080")!, user: "alice"))
/// let inbox = try await client.subscribe("#.alice.#", mode: .inbox)
/// Task { for await d in inbox { print(d.envelope.from, d.envelope.body) } }
/// let id = try await client.publish("alice.bob", "hi")
/// ```
///
/// It reconnects with exponential backoff and full jitter, resubscribes, acknowledges an inbox
/// delivery once the iteration moved past it, keeps every publish until Warren acknowledged it
/// (resent after a reconnect with its `cid`, which Warren publishes once), asks `getToken` for
/// a new token on 4401 or a 401, stops on 1008, and long-polls where the WebSocket cannot open,
/// trying the WebSocket again every `retryWebSocketAfter`. The WebSocket runs on SwiftNIO, HTTP
/// on URLSession (FoundationNetworking on Linux).
public actor WarrenClient {
    /// State changes (one reader).
    public nonisolated let states: AsyncStream<ClientState>
    /// Errors with no request to answer them: a handler-less error frame, a refused token (one reader).
    public nonisolated let errors: AsyncStream<WarrenError>
    public private(set) var state: ClientState = .connecting(retryIn: nil)

    /// The transport in use while open.
    public var transport: Transport? {
        if case .open(let t) = state { return t }
        return nil
    }

    private struct Entry {
        let pattern: String
        let mode: SubscriptionMode
        let presence: Bool
        let continuation: AsyncStream<Delivery>.Continuation
        var seen = RecentIDs()
        var ready = false
        var waiters: [CheckedContinuation<Void, any Error>] = []
    }

    private struct Pending {
        let frame: Wire.Pub
        let continuation: CheckedContinuation<[String], any Error>
        /// How it is being sent: over the socket (sent again when the socket ends), or by a POST
        /// whose own answer decides (never a second beside it); nil: not being sent.
        var sending: Transport?
    }

    /// How one connection (a WebSocket, or a run of poll sessions) ended.
    private struct Outcome {
        var opened: Bool
        var unauthorized = false
        var fatal: WarrenError?
        var switchTo: WebSocketConnection?
        /// The poll session left for `switchTo`: drained once the socket's subscriptions are in effect.
        var handover: LeftSession?
    }

    /// A poll session being left, for a new one or for the WebSocket: kept until what replaces it
    /// is in place, then drained and deleted. `inFlight` is its long-poll, not cancelled: an
    /// answer already on its way holds deliveries nothing else will bring.
    private struct LeftSession {
        let path: String
        let cursor: String?
        let inFlight: Task<Wire.PollAnswer, any Error>?
    }

    private let configuration: WarrenClientConfiguration
    private let http: HTTPRequester
    private let stateContinuation: AsyncStream<ClientState>.Continuation
    private let errorContinuation: AsyncStream<WarrenError>.Continuation
    private var token: String?
    private let prefix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    private var counter = 0
    private var closed = false
    private var loop: Task<Void, Never>?
    private var openWaiters: [CheckedContinuation<Void, any Error>] = []
    /// Why the client closed itself (Warren refused its token, or closed with 1008): what waiting
    /// callers are told, instead of a bare `closed`.
    private var endedBy: WarrenError?
    private var closedError: WarrenError { endedBy ?? .closed }

    private var subscriptions: [String: Entry] = [:]
    private var pending: [String: Pending] = [:]

    /// The connection a delivery came on (its ack goes back on that one only).
    private var epoch = 0
    private var socket: WebSocketConnection?
    /// Subscriptions not yet answered on a new WebSocket (open once none is left).
    private var resubscribing: Set<String>?

    private var pollOpen = false
    private var pollRestart = false
    private var pollInterrupt: (@Sendable () -> Void)?
    /// Waits for a request's answer (``answered(_:within:interruptible:)``), by serial.
    private var waits: [Int: CheckedContinuation<Bool, Never>] = [:]
    private var waitSerial = 0
    /// The wait for the long-poll in flight, which ``interruptPoll()`` ends.
    private var pollWait: Int?
    /// The poll session left for the WebSocket being opened, drained once its subscriptions are.
    private var handover: LeftSession?
    /// The socket's live deliveries while that session is still to be drained: handed on after
    /// what the drain takes, which is older.
    private var heldLive: [(subscription: String, env: Envelope, epoch: Int)]?
    private var pollSwitchTo: WebSocketConnection?
    private var pollProbing = false
    private var pollNextProbe = ContinuousClock.now
    /// Inbox deliveries of the last poll answer the application has not moved past yet.
    private var pollAwaiting: Set<String> = []
    private var pollAcked: CheckedContinuation<Void, Never>?

    public init(_ configuration: WarrenClientConfiguration) {
        self.configuration = configuration
        let timeout = configuration.timeout.components
        self.http = HTTPRequester(base: configuration.url, timeout: TimeInterval(timeout.seconds) + TimeInterval(timeout.attoseconds) / 1e18)
        self.token = configuration.token
        (states, stateContinuation) = AsyncStream.makeStream(of: ClientState.self, bufferingPolicy: .bufferingNewest(64))
        (errors, errorContinuation) = AsyncStream.makeStream(of: WarrenError.self, bufferingPolicy: .bufferingNewest(64))
    }

    /// A client that has started connecting (it keeps connecting until ``close()``).
    public static func connect(_ configuration: WarrenClientConfiguration) async -> WarrenClient {
        let client = WarrenClient(configuration)
        await client.start()
        return client
    }

    /// Starts connecting (``connect(_:)`` does).
    public func start() {
        guard loop == nil, !closed else { return }
        loop = Task { await self.run() }
    }

    /// Waits until the client is open; throws once it is closed (with the reason when it closed
    /// itself: `unauthorized`, `forbidden`).
    public func waitUntilOpen() async throws {
        if case .open = state { return }
        if closed { throw closedError }
        try await withCheckedThrowingContinuation { openWaiters.append($0) }
    }

    // MARK: subscriptions

    /// Subscribes `pattern`; returns once the subscription is in effect (or throws Warren's
    /// error: `forbidden`, `bad_route`, …). `presence` announces the user on a concrete live route.
    public func subscribe(_ pattern: String, mode: SubscriptionMode = .live, presence: Bool = false,
                          id: String? = nil) async throws -> Subscription {
        guard !closed else { throw closedError }
        counter += 1
        let id = id ?? "s\(counter)"
        guard subscriptions[id] == nil else { throw WarrenError("conflict", "subscription id \(id) is in use") }
        let (stream, continuation) = AsyncStream.makeStream(of: Delivery.self,
                                                            bufferingPolicy: mode == .live ? .bufferingNewest(10_000) : .unbounded)
        subscriptions[id] = Entry(pattern: pattern, mode: mode, presence: presence, continuation: continuation)
        if let socket { socket.send(Wire.encode(subFrame(id))) } else if pollOpen { restartPolling() }
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            if subscriptions[id] != nil { subscriptions[id]!.waiters.append(c) } else { c.resume(throwing: closedError) }
        }
        return Subscription(id: id, pattern: pattern, mode: mode, stream: stream, client: self)
    }

    func unsubscribe(_ id: String) {
        guard let entry = subscriptions.removeValue(forKey: id) else { return }
        entry.continuation.finish()
        for w in entry.waiters { w.resume(throwing: WarrenError.closed) }
        if let socket { socket.send(Wire.encode(Wire.Unsub(id: id))) } else if pollOpen { restartPolling() }
    }

    private func subFrame(_ id: String) -> Wire.Sub {
        let e = subscriptions[id]!
        return Wire.Sub(id: id, pattern: e.pattern, mode: e.mode.rawValue, presence: e.presence ? true : nil)
    }

    /// Subscription `id` asked for again on the socket of connection `epoch`, if both still are.
    private func resendSubscription(_ id: String, epoch asked: Int) {
        guard asked == epoch, subscriptions[id] != nil, let socket else { return }
        socket.send(Wire.encode(subFrame(id)))
    }

    /// The answer to subscription `id`: in effect, or refused (then it ends).
    private func settle(_ id: String, _ error: WarrenError?) {
        guard var entry = subscriptions[id] else { return }
        let waiters = entry.waiters
        entry.waiters = []
        if let error {
            subscriptions[id] = nil
            entry.continuation.finish()
            for w in waiters { w.resume(throwing: error) }
        } else {
            entry.ready = true
            subscriptions[id] = entry
            for w in waiters { w.resume() }
        }
    }

    /// Whether a buffered delivery is still to be handed out: not an inbox delivery handed out
    /// (and so acknowledged) before, nor one from a connection since lost (RabbitMQ requeued it
    /// then, and it comes again on the new one).
    func handOut(_ delivery: Delivery) -> Bool {
        guard let entry = subscriptions[delivery.subscription], entry.mode == .inbox else { return true }
        let id = delivery.envelope.id
        let stale = entry.seen.contains(id) || delivery.epoch != epoch
        guard stale else { return true }
        if delivery.epoch == epoch, let socket { socket.send(Wire.encode(Wire.Ack(ids: [id]))) }
        if pollAwaiting.remove(id) != nil, pollAwaiting.isEmpty { resumePollAcked() }
        return false
    }

    /// The iteration moved past an inbox delivery: acknowledged.
    func acknowledge(_ delivery: Delivery) {
        let id = delivery.envelope.id
        subscriptions[delivery.subscription]?.seen.insert(id)
        if delivery.epoch == epoch, let socket { socket.send(Wire.encode(Wire.Ack(ids: [id]))) }
        if pollAwaiting.remove(id) != nil, pollAwaiting.isEmpty { resumePollAcked() }
    }

    private func deliver(_ subscription: String, _ env: Envelope, redelivered: Bool, epoch: Int, onlyLive: Bool = false,
                         fromSocket: Bool = false) {
        // A poll answer names a subscription by its id (else its pattern).
        let key = subscriptions[subscription] != nil ? subscription : subscriptions.first { $0.value.pattern == subscription }?.key
        guard let key, var entry = subscriptions[key], !onlyLive || entry.mode == .live else { return }
        if fromSocket, entry.mode == .live, heldLive != nil {
            heldLive!.append((key, env, epoch))
            return
        }
        if entry.seen.contains(env.id) {
            // Handed on before: an inbox redelivery is acknowledged, not shown twice.
            if entry.mode == .inbox, epoch == self.epoch, let socket { socket.send(Wire.encode(Wire.Ack(ids: [env.id]))) }
            return
        }
        if entry.mode == .live {
            entry.seen.insert(env.id)
            subscriptions[key] = entry
        } else if pollOpen, socket == nil {
            pollAwaiting.insert(env.id)
        }
        entry.continuation.yield(Delivery(envelope: env, redelivered: redelivered, subscription: key, epoch: epoch))
    }

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

    private func send(route: String?, routes: [String]?, _ body: JSONValue, type: String, headers: [String: String]?,
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

    private func sendPublish(_ cid: String) {
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
    private func postPublish(_ cid: String) async {
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

    private func resolve(_ cid: String, _ ids: [String]) {
        pending.removeValue(forKey: cid)?.continuation.resume(returning: ids)
    }

    // MARK: the store and presence (DESIGN §10, §11)

    /// The newest `limit` stored messages of `route` before `before` (an envelope id), oldest first.
    public func history(_ route: String, before: String? = nil, limit: Int? = nil) async throws -> HistoryPage {
        var query = [URLQueryItem(name: "route", value: route)]
        if let before { query.append(URLQueryItem(name: "before", value: before)) }
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        return try await request("GET", "/v1/history", query: query, as: HistoryPage.self)
    }

    /// The user's conversations, newest activity first.
    public func conversations() async throws -> [Conversation] {
        try await request("GET", "/v1/conversations", as: Wire.ConversationList.self).conversations
    }

    /// Moves the user's read marker on `route` forward to `id`.
    public func read(_ route: String, id: String) async throws {
        _ = try await request("POST", "/v1/read", body: Wire.Read(route: route, id: id), as: NoAnswer.self)
    }

    /// The users present on `route`, on every node.
    public func presence(_ route: String) async throws -> [String] {
        try await request("GET", "/v1/presence", query: [URLQueryItem(name: "route", value: route)], as: Wire.Users.self).users
    }

    /// An HTTP request with the client's credentials; a 401 refreshes the token once.
    private func request<Answer: Decodable & Sendable>(_ method: String, _ path: String, query: [URLQueryItem] = [],
                                            body: (some Encodable & Sendable)? = Optional<Wire.Cursor>.none, as: Answer.Type) async throws -> Answer {
        do {
            return try await http.send(method, path, query: query, body: body, token: token, user: configuration.user, as: Answer.self)
        } catch let e as WarrenError where e.status == 401 {
            guard await refreshToken() else { throw e }
            return try await http.send(method, path, query: query, body: body, token: token, user: configuration.user, as: Answer.self)
        }
    }

    /// Asks `getToken` for a new token; false when there is no way to get one.
    private func refreshToken() async -> Bool {
        guard let getToken = configuration.getToken else { return false }
        do {
            token = try await getToken()
            return true
        } catch {
            errorContinuation.yield(WarrenError("unauthorized", "getToken failed: \(error)"))
            return false
        }
    }

    // MARK: closing

    /// Closes the client: pending publishes fail with `closed`, subscriptions end.
    public func close() {
        guard !closed else { return }
        closed = true
        loop?.cancel()
        socket?.close()
        interruptPoll()
        resumePollAcked()
        for p in pending.values { p.continuation.resume(throwing: closedError) }
        pending = [:]
        for entry in subscriptions.values {
            entry.continuation.finish()
            for w in entry.waiters { w.resume(throwing: closedError) }
        }
        subscriptions = [:]
        setState(.closed)
        stateContinuation.finish()
        errorContinuation.finish()
    }

    private func setState(_ new: ClientState) {
        guard new != state else { return }
        state = new
        stateContinuation.yield(new)
        switch new {
        case .open:
            let waiters = openWaiters
            openWaiters = []
            for w in waiters { w.resume() }
        case .closed:
            let waiters = openWaiters
            openWaiters = []
            for w in waiters { w.resume(throwing: closedError) }
        case .connecting:
            break
        }
    }

    // MARK: the connection loop

    /// Connects, and after each loss reconnects, until closed or told to stop.
    private func run() async {
        var attempt = 0
        var nextWebSocketTry = ContinuousClock.now
        var opened: WebSocketConnection?
        var handover: LeftSession?
        let transports = configuration.transports
        let canPoll = transports.contains(.polling)
        // Set once a token was refused and replaced: a fresh token refused too (with nothing
        // opened in between) means the token source is wrong, not late, so the next ask waits.
        var refreshedSinceOpen = false
        while !closed {
            let useWebSocket = transports.contains(.webSocket) && (opened != nil || !canPoll || ContinuousClock.now >= nextWebSocketTry)
            if case .open = state { setState(.connecting(retryIn: nil)) }
            let outcome = useWebSocket ? await runWebSocket(opened, handover: handover) : await runPolling(nextProbe: nextWebSocketTry)
            opened = nil
            handover = nil
            if closed { break }
            if outcome.opened {
                attempt = 0
                refreshedSinceOpen = false
            }
            if let next = outcome.switchTo {
                opened = next
                handover = outcome.handover
                continue
            }
            if let fatal = outcome.fatal {
                errorContinuation.yield(fatal)
                endedBy = fatal
                close()
                break
            }
            if outcome.unauthorized {
                if refreshedSinceOpen { await backOff(attempt: &attempt) }
                if closed { break }
                if await refreshToken() {
                    refreshedSinceOpen = true
                    nextWebSocketTry = .now
                    continue
                }
                let refused = WarrenError("unauthorized", "the token was refused and getToken gave no other")
                errorContinuation.yield(refused)
                endedBy = refused
                close()
                break
            }
            if !useWebSocket {
                // Polling failed or was lost as well: nothing says the WebSocket is what cannot get
                // through (Warren was unreachable, or restarting), so the next try starts with it.
                nextWebSocketTry = .now
            }
            if useWebSocket, !outcome.opened, canPoll {
                // The WebSocket could not open: poll now, and try it again later.
                nextWebSocketTry = .now + configuration.retryWebSocketAfter
                continue
            }
            await backOff(attempt: &attempt)
        }
    }

    /// Waits out the reconnect backoff for `attempt` (exponential, full jitter), and counts it.
    private func backOff(attempt: inout Int) async {
        let ceiling = min(configuration.backoffMax, configuration.backoffInitial * (1 << min(attempt, 16)))
        attempt += 1
        let delay = ceiling * Double.random(in: 0..<1)
        setState(.connecting(retryIn: delay))
        try? await Task.sleep(for: delay)
    }

    private func openedAs(_ transport: Transport) {
        setState(.open(transport))
    }

    /// The WebSocket URL with the credentials.
    private func webSocketURL() -> URL {
        var c = URLComponents(url: configuration.webSocketEndpoint, resolvingAgainstBaseURL: false)!
        var items = c.queryItems ?? []
        items.append(URLQueryItem(name: "device", value: configuration.device))
        if let token {
            items.append(URLQueryItem(name: "token", value: token))
        } else if let user = configuration.user {
            items.append(URLQueryItem(name: "user", value: user))
        }
        c.queryItems = items
        return c.url!
    }

    // MARK: WebSocket

    /// Runs a WebSocket (`already` open, or opened now); `left`, the poll session it replaces, is
    /// drained once the socket's subscriptions are in effect, so that the move misses nothing.
    private func openWebSocket() async throws -> WebSocketConnection {
        try await WebSocketConnection.connect(to: webSocketURL(), heartbeat: configuration.heartbeat, timeout: configuration.timeout)
    }

    private func runWebSocket(_ already: WebSocketConnection?, handover left: LeftSession? = nil) async -> Outcome {
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
    private func resubscribed(_ id: String?) {
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
    private func handle(_ text: String, epoch: Int) {
        guard let f = try? JSONDecoder().decode(Wire.ServerFrame.self, from: Data(text.utf8)) else {
            // Not a frame of DESIGN §4 (a proxy's page, a broken peer): said, and the socket goes on.
            errorContinuation.yield(WarrenError("bad_response", "a WebSocket frame that is not one of Warren's: \(text.prefix(80))"))
            return
        }
        switch f.op {
        case "msg":
            if let sub = f.sub, let env = f.env { deliver(sub, env, redelivered: f.redelivered ?? false, epoch: epoch, fromSocket: true) }
        case "subscribed":
            if let id = f.id {
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

    // MARK: long-polling

    private func restartPolling() {
        pollRestart = true
        interruptPoll()
        resumePollAcked()
    }

    private func resumePollAcked() {
        pollAcked?.resume()
        pollAcked = nil
    }

    /// While polling, tries the WebSocket at `pollNextProbe` and every `retryWebSocketAfter`
    /// after, in the background (a parked poll does not delay it); one that opens interrupts
    /// polling, which hands over to it.
    private func scheduleProbe() {
        guard configuration.transports.contains(.webSocket), !pollProbing, pollOpen, !closed else { return }
        pollProbing = true
        let due = pollNextProbe
        Task {
            try? await Task.sleep(until: due)
            let ws = self.probeIsWanted() ? try? await self.openWebSocket() : nil
            self.probed(ws)
        }
    }

    private func probeIsWanted() -> Bool { pollOpen && !closed && pollSwitchTo == nil }

    private func probed(_ ws: WebSocketConnection?) {
        pollProbing = false
        pollNextProbe = .now + configuration.retryWebSocketAfter
        guard let ws else { return scheduleProbe() }
        guard probeIsWanted() else { return ws.close() }
        pollSwitchTo = ws
        interruptPoll()
        resumePollAcked()
    }

    /// Ends what polling waits for: a restart, a probe that opened, or the close.
    private func interruptPoll() {
        pollInterrupt?()
        if let pollWait { endWait(pollWait, answered: false) }
    }

    /// Waits for `request` to answer: true once it did, false when `limit` passed first or, if
    /// `interruptible` (the long-poll in flight), when ``restartPolling()``, a probe that opened
    /// or ``close()`` came first. The request is never cancelled: it goes on either way.
    private func answered(_ request: Task<Wire.PollAnswer, any Error>, within limit: Duration? = nil,
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

    private func endWait(_ serial: Int, answered: Bool) {
        if pollWait == serial { pollWait = nil }
        waits.removeValue(forKey: serial)?.resume(returning: answered)
    }

    /// Runs `operation` so that ``restartPolling()``, a probe that opened or ``close()`` can interrupt it.
    private func interruptibly<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await operation() }
        pollInterrupt = { task.cancel() }
        defer { pollInterrupt = nil }
        if pollRestart || pollSwitchTo != nil || closed { task.cancel() }
        return try await task.value
    }

    /// Poll sessions (a new one whenever the subscriptions change; while there are none, a
    /// session with none, whose long-polls tell Warren going away as any session's do) until
    /// polling fails, the client closes, or a WebSocket opened meanwhile.
    private func runPolling(nextProbe: ContinuousClock.Instant) async -> Outcome {
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
                Wire.PollSubscription(id: $0.key, pattern: $0.value.pattern, mode: $0.value.mode.rawValue, presence: $0.value.presence ? true : nil)
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
            for id in subs.keys { settle(id, nil) }
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
    private static func sessionPath(_ session: String) -> String {
        "/v1/poll/" + (session.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? session)
    }

    /// An answer stops at `poll.max_batch` messages or 1 MiB (and carries the session's inbox
    /// deliveries too): a drain polls again while Warren says the session held more, at most
    /// this many times.
    private static let drainRounds = 200

    /// Takes what a session being left still holds — its live deliveries are handed on (the
    /// inbox ones go back to their queue when it is deleted, and come again in the new session
    /// or on the socket) — acking its cursor with it, then deletes it. Its long-poll in flight
    /// was answered by the first delivery after it parked, or is answered by the delete (with
    /// nothing, it was parked on an empty buffer): either way it holds the oldest, handed on first
    /// — unless the drain's first poll reached Warren before it did; the answers are handed on
    /// in the order Warren made them (``Wire/PollAnswer/inOrderMade(_:)``).
    /// `releasing`: then the socket's live deliveries held meanwhile are handed on.
    private func drain(_ old: LeftSession, releasing: Bool = false) async {
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
    private func drop(_ left: LeftSession) {
        dropSession(left.path, cursor: left.cursor)
    }

    /// Acks `cursor` if given, then deletes the session, in the background; each sent again (6
    /// tries over ~8 s: 0.25, 0.5, 1, 2, 4 s apart) while Warren cannot be reached: a delete that
    /// never arrives leaves the session holding its subscriptions, its user present, until
    /// `poll.session_ttl` (a balancer's dead node took every other request).
    private func dropSession(_ path: String, cursor: String?) {
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

    private func openedPolling() {
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

import Foundation

/// Warren's Swift client (docs/protocol.md): the same model as the JavaScript one
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
/// trying the WebSocket again every `retryWebSocketAfter`. A live subscription comes back
/// after any cut or move with what it missed: it resubscribes `since` its last envelope
/// (``recoveries`` says how that went). The WebSocket runs on SwiftNIO, HTTP
/// on URLSession (FoundationNetworking on Linux).
public actor WarrenClient {
    /// State changes (one reader).
    public nonisolated let states: AsyncStream<ClientState>
    /// Errors with no request to answer them: a handler-less error frame, a refused token (one reader).
    public nonisolated let errors: AsyncStream<WarrenError>
    /// How live subscriptions came back after a cut or a move (one reader).
    public nonisolated let recoveries: AsyncStream<RecoveryEvent>
    public private(set) var state: ClientState = .connecting(retryIn: nil)

    /// The transport in use while open.
    public var transport: Transport? {
        if case .open(let t) = state { return t }
        return nil
    }

    struct Entry {
        let pattern: String
        let mode: SubscriptionMode
        let presence: Bool
        let continuation: AsyncStream<Delivery>.Continuation
        /// A live subscription's last envelope (or where Warren said it started): what it
        /// resubscribes `since`.
        var lastID: String?
        var seen = RecentIDs()
        var ready = false
        var waiters: [CheckedContinuation<Void, any Error>] = []

        /// What it resubscribes `since`: a live subscription's last envelope.
        var since: String? { mode == .live ? lastID : nil }
    }

    struct Pending {
        let frame: Wire.Pub
        let continuation: CheckedContinuation<[String], any Error>
        /// How it is being sent: over the socket (sent again when the socket ends), or by a POST
        /// whose own answer decides (never a second beside it); nil: not being sent.
        var sending: Transport?
    }

    /// How one connection (a WebSocket, or a run of poll sessions) ended.
    struct Outcome {
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
    struct LeftSession {
        let path: String
        let cursor: String?
        let inFlight: Task<Wire.PollAnswer, any Error>?
    }

    let configuration: WarrenClientConfiguration
    let http: HTTPRequester
    let stateContinuation: AsyncStream<ClientState>.Continuation
    let errorContinuation: AsyncStream<WarrenError>.Continuation
    let recoveryContinuation: AsyncStream<RecoveryEvent>.Continuation
    var token: String?
    let prefix = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    var counter = 0
    var closed = false
    var loop: Task<Void, Never>?
    var openWaiters: [CheckedContinuation<Void, any Error>] = []
    /// Why the client closed itself (Warren refused its token, or closed with 1008): what waiting
    /// callers are told, instead of a bare `closed`.
    var endedBy: WarrenError?
    var closedError: WarrenError { endedBy ?? .closed }

    var subscriptions: [String: Entry] = [:]
    var pending: [String: Pending] = [:]

    /// The connection a delivery came on (its ack goes back on that one only).
    var epoch = 0
    var socket: WebSocketConnection?
    /// Subscriptions not yet answered on a new WebSocket (open once none is left).
    var resubscribing: Set<String>?

    var pollOpen = false
    var pollRestart = false
    var pollInterrupt: (@Sendable () -> Void)?
    /// Waits for a request's answer (``answered(_:within:interruptible:)``), by serial.
    var waits: [Int: CheckedContinuation<Bool, Never>] = [:]
    var waitSerial = 0
    /// The wait for the long-poll in flight, which ``interruptPoll()`` ends.
    var pollWait: Int?
    /// The poll session left for the WebSocket being opened, drained once its subscriptions are.
    var handover: LeftSession?
    /// The socket's live deliveries while that session is still to be drained: handed on after
    /// what the drain takes, which is older.
    var heldLive: [(subscription: String, env: Envelope, epoch: Int)]?
    var pollSwitchTo: WebSocketConnection?
    var pollProbing = false
    var pollNextProbe = ContinuousClock.now
    /// Inbox deliveries of the last poll answer the application has not moved past yet.
    var pollAwaiting: Set<String> = []
    var pollAcked: CheckedContinuation<Void, Never>?

    public init(_ configuration: WarrenClientConfiguration) {
        self.configuration = configuration
        let timeout = configuration.timeout.components
        self.http = HTTPRequester(base: configuration.url, timeout: TimeInterval(timeout.seconds) + TimeInterval(timeout.attoseconds) / 1e18)
        self.token = configuration.token
        (states, stateContinuation) = AsyncStream.makeStream(of: ClientState.self, bufferingPolicy: .bufferingNewest(64))
        (errors, errorContinuation) = AsyncStream.makeStream(of: WarrenError.self, bufferingPolicy: .bufferingNewest(64))
        (recoveries, recoveryContinuation) = AsyncStream.makeStream(of: RecoveryEvent.self, bufferingPolicy: .bufferingNewest(64))
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
        recoveryContinuation.finish()
    }

    func setState(_ new: ClientState) {
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
    func run() async {
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
    func backOff(attempt: inout Int) async {
        let ceiling = min(configuration.backoffMax, configuration.backoffInitial * (1 << min(attempt, 16)))
        attempt += 1
        let delay = ceiling * Double.random(in: 0..<1)
        setState(.connecting(retryIn: delay))
        try? await Task.sleep(for: delay)
    }

    func openedAs(_ transport: Transport) {
        setState(.open(transport))
    }

    /// The WebSocket URL with the credentials.
    func webSocketURL() -> URL {
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

}

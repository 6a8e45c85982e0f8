import NIOCore

/// One HTTP/1.1 connection of Warren's edge as a pure value: events in (bytes read, an answer
/// ready, output writable or not, input closed, the timer, a graceful shutdown), actions out
/// (serve a request, write, stop or resume reading, arm the timer, refuse, close). Framing,
/// pipelining, keep-alive, `Expect: 100-continue`, HTTP/1.0, backpressure and every timeout of
/// a connection live here and nowhere else; its drivers (``HTTPConnection`` over NIO's channel
/// or the epoll door's socket) only do what it says.
///
/// - Requests are read one at a time, in order: a pipelined request waits in ``input`` until
///   the one before is answered; past ``Settings/maxReadAhead`` bytes waiting, reading stops.
/// - Output: while the driver says its output is not writable (more than
///   `http.max_pending_output` waits for the client), no request is served and reading stops;
///   it resumes when the output drains. So a client that never reads holds a bounded buffer,
///   and TCP pushes back on it.
/// - Heads: every head must be whole within `http.head_timeout` of its first byte (blank lines
///   before it count), whether it is the connection's first or a later one; a connection
///   waiting for a head with nothing of it read is idle, and closes after
///   `http.idle_timeout`; so does one whose client reads nothing of its answers, or sends a
///   body's bytes further apart than that.
/// - Bodies: `Content-Length` or chunked, at most ``Settings/maxBody`` (413), their bytes
///   taken from the process's ``BodyBudget`` as they arrive (503 past it) and given back once
///   the request is answered.
/// - Closing: after an answer to `Connection: close`, HTTP/1.0 or a refusal, the output closes
///   once written and what the client still sends is read and dropped until it closes (or
///   `http.idle_timeout`): closing with unread bytes would reset the connection and could
///   destroy the answer before the client read it.
///
/// Every action but ``Action/none``, ``Action/serve(_:)`` and ``Action/close`` is followed by
/// ``next(now:)``; ``Action/serve(_:)`` by ``dispatched(now:)`` once the driver has handed the
/// request on (its answer may have come meanwhile, through ``answered(_:now:)``).
struct HTTPConnectionStateMachine {
    struct Settings: Sendable {
        var headTimeout: TimeAmount
        var idleTimeout: TimeAmount
        /// `http.max_body`.
        var maxBody: Int
        var head = RawRequestHead.Limits()
        /// Bytes read ahead of the request being answered (pipelined ones) before reading stops.
        var maxReadAhead = 64 << 10
    }

    /// A whole request, to be answered.
    struct Request {
        enum Kind {
            case head(RawRequestHead)
            /// The last poll again but for its `ack` value (``RepeatedPoll``): the kept head's,
            /// with the new value at `ack` within ``Request/bytes``.
            case repeated(ack: Range<Int>?)
        }

        var kind: Kind
        /// The head's bytes (what a hand-on gives back, and what the router's fields are read from).
        var bytes: ByteBuffer
        var body = ByteBuffer()
    }

    enum Action {
        case none
        /// Answer it (``answered(_:now:)``), then say ``dispatched(now:)``.
        case serve(Request)
        /// Write these bytes (`100 Continue`, or an answer).
        case write(ByteBuffer)
        /// Write the answer, then close the output once it is written; keep reading (and
        /// dropping) until the client closes.
        case writeAndClose(ByteBuffer)
        /// Answer with this refusal, then as ``writeAndClose(_:)``.
        case refuse(HTTPRefusal)
        case close
        case stopReading
        case resumeReading
        /// Arm the connection's one timer for this deadline, replacing any; when it fires, say
        /// ``timerFired(now:)``.
        case schedule(NIODeadline)
    }

    private struct Serving {
        /// The answer closes the connection (`Connection: close`, HTTP/1.0).
        var close: Bool
        /// A long-poll waits for its answer: a client closing its side is a client gone.
        var parked = false
    }

    private enum BodyFraming {
        case length(remaining: Int)
        case chunked(ChunkedBody)
    }

    private struct BodyRead {
        var head: RawRequestHead
        var bytes: ByteBuffer
        var framing: BodyFraming
        var body = ByteBuffer()
        var continued = false
    }

    private enum State {
        /// Waiting for a request head; ``input`` holds none or part of one.
        case head
        /// A head read; its body arriving.
        case body(BodyRead)
        /// ``Action/serve(_:)`` given; ``dispatched(now:)`` not said yet.
        case dispatching(Serving)
        /// Handed on; the answer comes later (a parked poll, a task).
        case waiting(Serving)
        /// The answer came before ``dispatched(now:)``.
        case answeredInDispatch
        /// Output closing after a final answer; input dropped until the client closes.
        case closing(until: NIODeadline)
        /// The connection is someone else's now (a WebSocket's, or a driver that serves it all).
        case handedOn
        case closed
    }

    let settings: Settings
    private let budget: BodyBudget
    private var state = State.head
    /// Bytes read and not yet taken as a request.
    private var input = ByteBuffer()
    /// When the head being read must be whole.
    private var headDeadline: NIODeadline?
    /// When the connection last answered (or its output drained, or it opened): idle since.
    private var lastActive: NIODeadline
    /// When the body being read last got bytes.
    private var bodyReadAt: NIODeadline
    /// The deadline the driver's timer is armed for.
    private var armed: NIODeadline?
    private var writable = true
    private var readingStopped = false
    private var inputEnded = false
    private var quiescing = false
    /// Body bytes of the current request taken from ``budget``.
    private var heldBody = 0
    /// The last poll's head, recognised without parsing when repeated (``keep(_:)``).
    private(set) var template: RepeatedPoll?

    init(settings: Settings, budget: BodyBudget, now: NIODeadline) {
        self.settings = settings
        self.budget = budget
        lastActive = now
        bodyReadAt = now
    }

    // MARK: events

    /// The connection is open: its idle timer starts.
    mutating func start(now: NIODeadline) -> Action {
        lastActive = now
        return arm(now + settings.idleTimeout) ?? .none
    }

    /// Bytes read from the client.
    mutating func read(_ bytes: ByteBuffer, now: NIODeadline) -> Action {
        switch state {
        case .closed, .handedOn, .closing:
            return .none
        default:
            break
        }
        if input.readableBytes == 0 {
            input = bytes
        } else {
            var bytes = bytes
            input.writeBuffer(&bytes)
        }
        switch state {
        case .head:
            return advance(now: now)
        case .body:
            bodyReadAt = now
            return advance(now: now)
        default:
            if input.readableBytes > settings.maxReadAhead, !readingStopped {
                readingStopped = true
                return .stopReading
            }
            return .none
        }
    }

    /// What to do next, after an action that is not ``Action/serve(_:)``.
    mutating func next(now: NIODeadline) -> Action {
        switch state {
        case .head, .body:
            return advance(now: now)
        case .closing(let until):
            // What the client still sends is read (and dropped) until it closes.
            if readingStopped {
                readingStopped = false
                return .resumeReading
            }
            return arm(until) ?? .none
        case .dispatching, .waiting, .answeredInDispatch, .handedOn, .closed:
            return .none
        }
    }

    /// The driver handed the request of the last ``Action/serve(_:)`` on.
    mutating func dispatched(now: NIODeadline) -> Action {
        switch state {
        case .dispatching(let serving):
            state = .waiting(serving)
            return .none
        case .answeredInDispatch:
            state = .head
            return advance(now: now)
        default:
            return .none
        }
    }

    /// The request being served is a long-poll waiting for its answer. If its client has
    /// closed its side already (the poll was readied in a task meanwhile), it is gone: close.
    mutating func parked(now: NIODeadline) -> Action {
        switch state {
        case .dispatching(var serving):
            serving.parked = true
            state = .dispatching(serving)
        case .waiting(var serving):
            serving.parked = true
            state = .waiting(serving)
        default:
            return .none
        }
        return inputEnded ? close() : .none
    }

    /// The answer to the request being served closes the connection (a refused WebSocket
    /// handshake: its client opens a new connection for the next one).
    mutating func closeAfterAnswer() {
        switch state {
        case .dispatching(var serving):
            serving.close = true
            state = .dispatching(serving)
        case .waiting(var serving):
            serving.close = true
            state = .waiting(serving)
        default:
            break
        }
    }

    /// Whether the answer to the request being served closes the connection: its head must say
    /// `connection: close`.
    var answerCloses: Bool {
        switch state {
        case .dispatching(let serving), .waiting(let serving): serving.close || quiescing
        default: true
        }
    }

    /// The answer to the request being served (one whole response). Nothing if none is served
    /// (the connection closed meanwhile).
    mutating func answered(_ response: ByteBuffer, now: NIODeadline) -> Action {
        let serving: Serving
        let inDispatch: Bool
        switch state {
        case .dispatching(let s):
            (serving, inDispatch) = (s, true)
        case .waiting(let s):
            (serving, inDispatch) = (s, false)
        default:
            return .none
        }
        releaseBody()
        lastActive = now
        if serving.close || quiescing {
            state = .closing(until: now + settings.idleTimeout)
            return .writeAndClose(response)
        }
        state = inDispatch ? .answeredInDispatch : .head
        return .write(response)
    }

    /// The driver's output became writable (drained below its low mark) or not (over
    /// `http.max_pending_output`).
    mutating func writabilityChanged(_ isWritable: Bool, now: NIODeadline) -> Action {
        writable = isWritable
        if isWritable {
            lastActive = now
            return next(now: now)
        }
        switch state {
        case .closing, .closed, .handedOn:
            return .none
        default:
            guard !readingStopped else { return .none }
            readingStopped = true
            return .stopReading
        }
    }

    /// The client closed its side of the connection.
    mutating func inputClosed(now: NIODeadline) -> Action {
        inputEnded = true
        switch state {
        case .head, .body:
            return advance(now: now)
        case .dispatching(let serving), .waiting(let serving):
            // A long-poll's client is gone; any other answer goes out, then the connection closes.
            return serving.parked ? close() : .none
        case .closing:
            return close()
        case .answeredInDispatch, .handedOn, .closed:
            return .none
        }
    }

    /// The timer armed by the last ``Action/schedule(_:)`` fired.
    mutating func timerFired(now: NIODeadline) -> Action {
        armed = nil
        let idle = settings.idleTimeout
        switch state {
        case .closed, .handedOn:
            return .none
        case .closing(let until):
            return now >= until ? close() : arm(until) ?? .none
        case .head:
            if let deadline = headDeadline, now >= deadline { return close() }
            // Idle: no head begun, or a client that reads none of its answers.
            if input.readableBytes == 0 || !writable, now - lastActive >= idle { return close() }
            let idleAt = (input.readableBytes == 0 || !writable) ? lastActive + idle : now + idle
            return arm(headDeadline.map { min($0, idleAt) } ?? idleAt) ?? .none
        case .body:
            return now - bodyReadAt >= idle ? close() : arm(bodyReadAt + idle) ?? .none
        case .dispatching, .waiting, .answeredInDispatch:
            // Being answered (a long-poll waits up to poll.max_wait): not idle.
            return arm(now + idle) ?? .none
        }
    }

    /// A graceful shutdown: the connection closes now, or once the answer being made is written.
    mutating func quiesce(now: NIODeadline) -> Action {
        quiescing = true
        switch state {
        case .head, .body:
            return close()
        default:
            return .none
        }
    }

    /// The connection closed (whoever closed it).
    mutating func closed() {
        releaseBody()
        state = .closed
    }

    /// The connection becomes someone else's (a WebSocket's, or a driver that serves what this
    /// one's does not): what was read after the request being served, to give them.
    mutating func takeOver() -> ByteBuffer {
        releaseBody()
        state = .handedOn
        defer { input = ByteBuffer() }
        return input
    }

    /// Recognise a repeat of this poll's head without parsing it (``RepeatedPoll``).
    mutating func keep(_ template: RepeatedPoll?) { self.template = template }

    // MARK: requests

    /// Takes the next request from ``input`` if no request is being served.
    private mutating func advance(now: NIODeadline) -> Action {
        while true {
            switch state {
            case .head:
                guard writable else { return stopReading() }
                guard !quiescing else { return close() }
                guard input.readableBytes > 0 else {
                    headDeadline = nil
                    return inputEnded ? close() : resumeReading()
                }
                if let template, let found = input.withUnsafeReadableBytes({ template.match($0) }) {
                    headDeadline = nil
                    let bytes = input.readSlice(length: found.length)!
                    return serve(Request(kind: .repeated(ack: found.ack), bytes: bytes), close: false)
                }
                switch RawRequestHead.parse(input.readableBytesView, limits: settings.head) {
                case .incomplete:
                    // Half a head, then the client closed.
                    if inputEnded { return close() }
                    if headDeadline == nil {
                        let deadline = now + settings.headTimeout
                        headDeadline = deadline
                        if let schedule = arm(deadline) { return schedule }
                    }
                    return resumeReading()
                case .refused(let refusal):
                    return refuse(refusal, now: now)
                case .head(let head):
                    headDeadline = nil
                    let bytes = input.readSlice(length: head.length)!
                    guard head.hasBody else { return serve(Request(kind: .head(head), bytes: bytes), close: head.close) }
                    if !head.chunked, head.contentLength > settings.maxBody { return refuse(.bodyTooLarge(settings.maxBody), now: now) }
                    let framing: BodyFraming = head.chunked ? .chunked(ChunkedBody()) : .length(remaining: head.contentLength)
                    bodyReadAt = now
                    state = .body(BodyRead(head: head, bytes: bytes, framing: framing))
                }
            case .body(var read):
                guard writable else { return stopReading() }
                state = .head  // not holding a second reference to the body while it grows
                let before = read.body.readableBytes
                let outcome = Self.readBody(&read, from: &input, maxBody: settings.maxBody)
                let added = read.body.readableBytes - before
                if added > 0 {
                    guard budget.take(added) else { return refuse(.busy, now: now) }
                    heldBody += added
                }
                switch outcome {
                case .refused(let refusal):
                    return refuse(refusal, now: now)
                case .done:
                    return serve(Request(kind: .head(read.head), bytes: read.bytes, body: read.body), close: read.head.close)
                case .needMore:
                    if inputEnded { return refuse(.bodyCutShort, now: now) }
                    if read.head.expectsContinue, !read.continued, read.body.readableBytes == 0 {
                        read.continued = true
                        state = .body(read)
                        return .write(ByteBuffer(staticString: "HTTP/1.1 100 Continue\r\n\r\n"))
                    }
                    state = .body(read)
                    return resumeReading()
                }
            default:
                return .none
            }
        }
    }

    private static func readBody(_ read: inout BodyRead, from input: inout ByteBuffer, maxBody: Int) -> ChunkedBody.Outcome {
        switch read.framing {
        case .length(let remaining):
            let n = min(remaining, input.readableBytes)
            if n > 0 {
                var slice = input.readSlice(length: n)!
                if read.body.readableBytes == 0 { read.body = slice } else { read.body.writeBuffer(&slice) }
            }
            read.framing = .length(remaining: remaining - n)
            return remaining == n ? .done : .needMore
        case .chunked(var chunks):
            read.framing = .length(remaining: 0)
            let outcome = chunks.decode(&input, into: &read.body, maxBody: maxBody)
            read.framing = .chunked(chunks)
            return outcome
        }
    }

    private mutating func serve(_ request: Request, close: Bool) -> Action {
        // Nothing left: the read buffer's storage is not kept while the request is answered.
        if input.readableBytes == 0 { input = ByteBuffer() }
        state = .dispatching(Serving(close: close))
        return .serve(request)
    }

    private mutating func refuse(_ refusal: HTTPRefusal, now: NIODeadline) -> Action {
        releaseBody()
        input = ByteBuffer()
        headDeadline = nil
        state = .closing(until: now + settings.idleTimeout)
        return .refuse(refusal)
    }

    private mutating func close() -> Action {
        releaseBody()
        state = .closed
        return .close
    }

    private mutating func stopReading() -> Action {
        guard !readingStopped else { return .none }
        readingStopped = true
        return .stopReading
    }

    private mutating func resumeReading() -> Action {
        guard readingStopped, writable, input.readableBytes <= settings.maxReadAhead else { return .none }
        readingStopped = false
        return .resumeReading
    }

    /// Arms the timer for `deadline` if it is not armed for an earlier one.
    private mutating func arm(_ deadline: NIODeadline) -> Action? {
        if let armed, armed <= deadline { return nil }
        armed = deadline
        return .schedule(deadline)
    }

    private mutating func releaseBody() {
        budget.give(heldBody)
        heldBody = 0
    }
}

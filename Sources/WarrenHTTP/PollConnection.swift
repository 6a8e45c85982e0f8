import Foundation
import NIOCore
import WarrenCore

/// A poller's connection, whatever serves its socket (``PollConnectionIO``): `POST /v1/poll`
/// (a new session), `GET /v1/poll/<session>` and `POST /v1/messages` (a publish) are read from
/// the raw bytes (``RawRequestHead``) and answered here. A WebSocket handshake at `/v1/ws` is
/// admitted (or refused with its status) here too when the I/O upgrades (a NIO channel's), and
/// the connection becomes a ``WebSocketConnectionHandler``'s; the epoll door hands it on
/// instead. The first request it does not take (another endpoint, a
/// cross-origin request when CORS is configured, anything unusual) and everything after it go to
/// hummingbird's HTTP/1 pipeline (``PollConnectionIO/handOn(_:)``), and this connection is done.
///
/// A poll of a session open on this node with a token verified before is answered on the
/// connection's loop, without a task or a hop; one that is not (the session's first poll
/// here, a token not seen yet, a paused inbox) is readied in a short-lived task
/// (``PollRoutes/preparePoll(query:authorization:session:home:)``) and then taken the same way.
/// Session creation runs in a short-lived task too. The answers are the same JSON as the
/// router's, from the same ``PollService``.
///
/// It keeps keep-alive connections to `http.idle_timeout` between requests, answers in order
/// (what a pipelining client sends meanwhile is held), honours `Connection: close`, and on a
/// graceful shutdown closes the connection once no answer is pending.
///
/// Its I/O calls it on the connection's loop: ``start()``, ``read(_:)``, ``inputClosed()``,
/// ``quiesce()``, ``closed()`` and ``detached()``.
final class PollConnection<IO: PollConnectionIO> {
    private enum Taken {
        /// The session string's bytes in the request target (sliced from it, not copied).
        case poll(session: Range<Int>)
        case create
        case publish
        case webSocket
        /// A body over the limit that the client has not sent yet (it waits for `100 Continue`).
        case tooLarge
    }

    let door: PollConnectionContext
    /// The socket.
    let io: IO
    /// Bytes read and not yet taken.
    private var pending = ByteBuffer()
    /// The request being answered: whether its head asks to close after it, and its raw bytes
    /// (handed on whole if the router must answer it). Not its head: a copy of that kept until
    /// the answer was a retain and a release of each of its strings per poll.
    private var current: (close: Bool, bytes: ByteBuffer)?
    private var parked: (PollOutput, UInt64)?
    /// Where this connection's polls are answered (made at its first poll).
    private var sink: PollConnectionSink?
    /// The node's poll service, kept from this connection's first poll (a node has one for its
    /// life): a poll asks only whether the node drains, not the link's and the routes' locks.
    private var service: PollService? {
        didSet { serviceRef = service.map { Unmanaged.passUnretained($0) } }
    }
    /// ``service``, unretained (it is held above): a repeated poll calls it without a retain
    /// and a release (``takeRepeated()``, which never sets ``service``). Both loops' polls
    /// call the one service, and it is weakly referenced, so each was an atomic on a reference
    /// count in a side table that both cores write.
    private var serviceRef: Unmanaged<PollService>?
    /// The session this connection polled last: its next poll of the same session string takes
    /// it without the node's table of sessions.
    private var lastPolled: PollService.LastPolled?
    /// Its I/O is done with it (out of the pipeline): a poll readied in a task after that keeps
    /// no sink (it would hold this connection).
    private var removed = false
    /// Answered with a refusal and closing: what else arrives is not read.
    private var refusedAndClosing = false
    /// The poll being served is counted in `warren_connections{frontend="poll"}`.
    private var counted = false
    /// The connection is hummingbird's now.
    private(set) var handedOn = false
    /// Close once the pending answer is written (`Connection: close`, a graceful shutdown).
    private var closeAfterAnswer = false
    private var idleTimer: Scheduled<Void>?
    /// When the connection last had nothing to answer (set as each answer is written): while a
    /// request is being answered, it is not idle (``idleCheck()``).
    private var lastActive = NIODeadline.now()
    /// ``takeRequests()`` is running (an answer written from inside it must not re-enter it).
    private var taking = false
    /// The client closed its side: once nothing is being answered, the connection closes.
    private var clientClosed = false
    /// `100 Continue` was written for the request whose body is awaited.
    private var continued = false
    /// The last poll taken here with what its parse found, kept while ``lastPolled`` is its
    /// session: a next poll that repeats it but for its `ack` (``RepeatedPoll``) is taken
    /// without parsing its head, its query or its identity again.
    private var repeated: KeptPoll?

    init(_ door: PollConnectionContext, io: IO) {
        self.door = door
        self.io = io
    }

    // MARK: events from the I/O

    /// The connection is open: its idle check starts.
    func start() {
        if idleTimer == nil { scheduleIdleCheck(in: door.idleTimeout) }
    }

    /// The I/O is done with this connection (NIO's handler left the pipeline).
    func detached() {
        idleTimer?.cancel()
        idleTimer = nil
        // It holds this connection: dropped with it (a poll parked still holds it until answered).
        sink = nil
        removed = true
    }

    /// Bytes read.
    func read(_ bytes: ByteBuffer) {
        guard !refusedAndClosing else { return }
        var bytes = bytes
        if pending.readableBytes == 0 { pending = bytes } else { pending.writeBuffer(&bytes) }
        if current == nil {
            takeRequests()
        } else if pending.readableBytes > door.maxBodyBytes + 64 << 10 {
            // Far more pipelined behind a pending answer than any poller sends.
            io.close()
        }
    }

    /// The connection closed.
    func closed() {
        // A parked poll whose client went: answered now with nothing taken.
        sink?.gone()
        if let (output, id) = parked { output.wake(parked: id) }
        idleTimer?.cancel()
        idleTimer = nil
    }

    /// A graceful shutdown: closed now, or once the pending answer is written.
    func quiesce() {
        if current == nil { io.close() } else { closeAfterAnswer = true }
    }

    /// The client closed its side of the connection. It can ask nothing more, so the connection
    /// closes now unless an answer is being made (a publish, a new session: written, then
    /// closed). A parked poll is a client gone, as nginx takes it (a client abort): closing
    /// answers it with nothing taken (``closed()``), so what arrives meanwhile stays buffered
    /// for the session's next poll instead of going to a socket nobody reads. Left open, such a
    /// connection sat in CLOSE_WAIT, holding its descriptor, until the head timeout,
    /// `http.idle_timeout` or the poll's `wait`.
    func inputClosed() {
        clientClosed = true
        if current == nil || parked != nil { io.close() }
    }

    // MARK: requests

    /// Takes the complete requests read so far, one at a time, while no answer is pending.
    private func takeRequests() {
        // Not re-entered from an answer written meanwhile: the loop below goes on instead.
        guard !taking else { return }
        taking = true
        defer { taking = false }
        while current == nil, !handedOn, pending.readableBytes > 0 {
            if repeated != nil, takeRepeated() { continue }
            let head: RawRequestHead
            switch RawRequestHead.parse(pending.readableBytesView) {
            case .incomplete: return
            case .other: return handOn()
            case .uriTooLong: return refuseLongURI()
            case .head(let h): head = h
            }
            // The router answers it (its ExpectContinueHandler says `100 Continue` when awaited).
            guard let taken = take(head) else { return handOn() }
            if case .tooLarge = taken {
                // Refused before the client sends the body; it may not wait, so nothing more is read.
                current = (head.close, ByteBuffer())
                closeAfterAnswer = true
                return fail(door.routes.support.tooLarge)
            }
            guard pending.readableBytes >= head.length + head.contentLength else {
                // The body is on its way, or waits for our word.
                return continueIfAwaited(head)
            }
            continued = false
            let bytes = pending.readSlice(length: head.length + head.contentLength)!
            // Nothing here keeps the read buffer's storage once a request is taken (a parked
            // poll would hold kilobytes of it, and the channel could not reuse it).
            if pending.readableBytes == 0 { pending = ByteBuffer() }
            current = (head.close, bytes)
            switch taken {
            case .poll(let bytes):
                serve(head, session: Self.slice(head.target, bytes), prepared: false)
            case .create:
                current!.bytes = ByteBuffer()
                create(head, body: ByteBuffer(bytes: bytes.readableBytesView.dropFirst(head.length)))
            case .publish:
                current!.bytes = ByteBuffer()
                publish(head, body: ByteBuffer(bytes: bytes.readableBytesView.dropFirst(head.length)))
            case .webSocket:
                guard io.upgradesWebSockets else { return handOn() }
                current!.bytes = ByteBuffer()
                upgrade(head)
            case .tooLarge:
                break
            }
        }
    }

    /// The bytes `range` of `target`, as a substring of it.
    private static func slice(_ target: String, _ range: Range<Int>) -> Substring {
        let utf8 = target.utf8
        return Substring(utf8[utf8.index(utf8.startIndex, offsetBy: range.lowerBound)..<utf8.index(utf8.startIndex, offsetBy: range.upperBound)])
    }

    /// Takes a poll that repeats the last one taken here but for its `ack` (``RepeatedPoll``),
    /// with what that one's parse found. False, nothing read, for anything else (parsed as usual).
    private func takeRepeated() -> Bool {
        guard let r = repeated, let serviceRef, !door.isDraining,
              let found = pending.withUnsafeReadableBytes({ r.template.match($0) }) else { return false }
        // A token that ran out since is the slow path's to refuse.
        let now = WallClock.milliseconds()
        if let expiresAt = r.expiresAt, expiresAt <= now {
            repeated = nil
            return false
        }
        continued = false
        let bytes = pending.readSlice(length: found.length)!
        if pending.readableBytes == 0 { pending = ByteBuffer() }
        current = (r.head.close, bytes)
        let ack = found.ack.map { bytes.getString(at: bytes.readerIndex + $0.lowerBound, length: $0.count)! }
        poll(serviceRef, r.head, session: r.session, identity: r.identity, wait: r.wait, max: r.max, ack: ack,
             prepared: false, repeated: true, now: now)
        return true
    }

    /// Writes `100 Continue` once for a request whose client holds its body back until told
    /// (RFC 9110 §10.1.1), when the body has not come yet.
    private func continueIfAwaited(_ head: RawRequestHead) {
        guard head.expectsContinue, !continued, pending.readableBytes < head.length + head.contentLength,
              io.isActive else { return }
        continued = true
        io.write(ByteBuffer(staticString: "HTTP/1.1 100 Continue\r\n\r\n"))
    }

    private func take(_ head: RawRequestHead) -> Taken? {
        // A browser's handshake always has an Origin; CORS does not govern WebSockets.
        if head.webSocketKey != nil { return .webSocket }
        guard !(door.cors && head.hasOrigin) else { return nil }
        var target = head.target
        // On the contiguous bytes: index-by-index work on `String.UTF8View` showed in poll profiles.
        return target.withUTF8 { path -> Taken? in
            // A body over the limit: refused at once if the client waits for `100 Continue`;
            // otherwise the router reads it up to the limit and answers 413.
            let fits = head.contentLength <= door.maxBodyBytes
            if ByteSearch.hasPrefix(path, "/v1/messages") {
                let rest = path[12...]
                guard head.method == .post, rest.isEmpty || rest.first == UInt8(ascii: "?") else { return nil }
                return fits ? .publish : head.expectsContinue ? .tooLarge : nil
            }
            guard ByteSearch.hasPrefix(path, "/v1/poll") else { return nil }
            let end = ByteSearch.index(of: UInt8(ascii: "?"), in: path, from: 8) ?? path.count
            let rest = path[8..<end]
            if rest.isEmpty {
                guard head.method == .post else { return nil }
                return fits ? .create : head.expectsContinue ? .tooLarge : nil
            }
            guard head.method == .get, head.contentLength == 0, rest.first == UInt8(ascii: "/") else { return nil }
            let session = rest.dropFirst()
            guard !session.isEmpty, ByteSearch.index(of: UInt8(ascii: "/"), in: path, from: session.startIndex, to: end) == nil else { return nil }
            return .poll(session: session.startIndex..<session.endIndex)
        }
    }

    /// Gives the connection to hummingbird's pipeline, from the request being answered (if the
    /// router must answer it after all) or the next one on.
    private func handOn() {
        handedOn = true
        idleTimer?.cancel()
        idleTimer = nil
        var bytes = current?.bytes ?? ByteBuffer()
        current = nil
        bytes.writeBuffer(&pending)
        io.handOn(bytes)
    }

    // MARK: polls

    /// A poll: answered (or parked) here when the session is open on this node and the token
    /// known; otherwise readied in a task first (`prepared` false), or handed to the router.
    private func serve(_ head: RawRequestHead, session: Substring, prepared: Bool) {
        let query = Query(target: head.target)
        if service == nil || door.isDraining { service = door.service() }
        // Held here for the call: what the poll answers at once may take the next request, whose
        // own parse may set ``service`` again.
        guard let service else { return handOn() }  // the router says why
        let wait = PollRoutes.nonNegative(query.items["wait"], name: "wait", default: 0)
        let max = PollRoutes.nonNegative(query.items["max"], name: "max", default: door.maxBatch)
        guard case .success(let wait) = wait, case .success(let max) = max else {
            let error = [wait, max].compactMap { if case .failure(let e) = $0 { e } else { nil } }[0]
            return fail(error)
        }
        guard let known = door.authenticator.known(query: query, authorization: head.authorization) else {
            return prepared ? handOn() : prepare(head, session: session, query: query)
        }
        // The head's bytes, kept if the poll is taken here (gone once it parks).
        let template = head.expectsContinue || head.close ? nil : current?.bytes.withUnsafeReadableBytes { RepeatedPoll(head: $0) }
        repeated = nil
        let taken = poll(Unmanaged.passUnretained(service), head, session: session, identity: known.identity, wait: wait, max: max,
                         ack: query.items["ack"], prepared: prepared, repeated: false)
        if taken, let template {
            repeated = KeptPoll(template: template, head: head, session: session, identity: known.identity, expiresAt: known.expiresAt,
                                wait: wait, max: max)
        }
    }

    /// Takes a poll whose identity, `wait` and `max` are known: answered or parked here (true),
    /// or, when the session is not open here for it, readied in a task first (`prepared`
    /// false) or handed to the router. `repeated`: the head is the last poll's, not this one's
    /// (``takeRepeated()``).
    @discardableResult
    private func poll(_ service: Unmanaged<PollService>, _ head: RawRequestHead, session: Substring,
                      identity: ClientIdentity, wait: Int, max: Int, ack: String?, prepared: Bool, repeated: Bool,
                      now: Int64 = WallClock.milliseconds()) -> Bool {
        // The user's connection slot is the session's (held from its opening on this node);
        // the poll only counts in `warren_connections{frontend="poll"}` while it is served.
        if !counted {
            door.metrics.connectionOpened(.poll)
            counted = true
        }
        // The answer may come from the broker's thread or a timer: written on this loop.
        let sink = self.sink ?? PollConnectionSink(self)
        if !removed { self.sink = sink }
        let taken = service._withUnsafeGuaranteedRef {
            $0.pollOnLoop(session: session, user: identity.user, policy: identity.policy, wait: wait, max: max,
                          ack: ack, to: sink, last: &lastPolled, repeated: repeated, now: now)
        }
        switch taken {
        case .elsewhere:
            release()
            self.repeated = nil
            if repeated {
                // Parsed after all, to be readied with its own query.
                guard let bytes = current?.bytes, case .head(let head) = RawRequestHead.parse(bytes.readableBytesView),
                      case .poll(let range)? = take(head) else {
                    // Not a head this parser takes after all (it matched one it took): the router answers it.
                    handOn()
                    return false
                }
                current!.close = head.close
                serve(head, session: Self.slice(head.target, range), prepared: false)
            } else if prepared {
                handOn()
            } else {
                prepare(head, session: session, query: Query(target: head.target))
            }
            return false
        case .answered:
            break
        case .parked(let output, let id):
            // The answer may have come already (from another thread, queued to this loop).
            // The request's bytes are not needed any more (nor their buffer kept).
            if current != nil {
                parked = (output, id)
                current!.bytes = ByteBuffer()
                // Readied in a task, the poll parks after its client went.
                if clientClosed { io.close() }
            }
        }
        return true
    }

    /// Verifies the token and opens the session here in a short-lived task, then takes the poll.
    private func prepare(_ head: RawRequestHead, session: Substring, query: Query) {
        let routes = door.routes
        let loop = io.loop
        let bound = NIOLoopBound(self, eventLoop: loop)
        Task {
            let failure: (status: Int, body: [UInt8])?
            do {
                try await routes.preparePoll(query: query, authorization: head.authorization, session: String(session), home: loop)
                failure = nil
            } catch {
                failure = RouteSupport.failure(error)
            }
            loop.execute {
                let connection = bound.value
                if let failure {
                    connection.answer(status: failure.status, body: ByteBuffer(bytes: failure.body))
                } else if connection.current != nil {
                    connection.serve(head, session: session, prepared: true)
                }
            }
        }
    }

    /// `POST /v1/poll`, in a short-lived task.
    private func create(_ head: RawRequestHead, body: ByteBuffer) {
        let routes = door.routes
        let home = io.loop
        answerInTask(status: 201) {
            try await routes.createSession(query: Query(target: head.target), authorization: head.authorization, body: body, home: home)
        }
    }

    /// `POST /v1/messages`, in a short-lived task (it waits for the broker's confirm).
    private func publish(_ head: RawRequestHead, body: ByteBuffer) {
        let routes = door.routes
        answerInTask(status: 202) {
            try await routes.publishMessage(query: Query(target: head.target), authorization: head.authorization, body: body)
        }
    }

    /// Runs `work` in a short-lived task and answers the current request on this loop with
    /// `status` and its JSON, or with the error it threw.
    private func answerInTask(status: Int, _ work: @escaping @Sendable () async throws -> [UInt8]) {
        let loop = io.loop
        let bound = NIOLoopBound(self, eventLoop: loop)
        Task {
            let answer: (status: Int, body: [UInt8])
            do {
                answer = (status, try await work())
            } catch {
                answer = RouteSupport.failure(error)
            }
            loop.execute {
                let connection = bound.value
                connection.answer(status: answer.status, body: ByteBuffer(bytes: answer.body))
            }
        }
    }

    // MARK: WebSockets

    /// A WebSocket handshake: admitted at once when the identity is known, else once the
    /// token is verified in a short-lived task; then answered `101` or refused.
    private func upgrade(_ head: RawRequestHead) {
        let door = self.door.webSockets
        let path = head.target.utf8.prefix { $0 != UInt8(ascii: "?") }
        guard path.elementsEqual("/v1/ws".utf8) else {
            return upgraded(head, .failure(.init(status: 404, code: .notFound, message: "WebSocket upgrades are served at /v1/ws")))
        }
        let query = Query(target: head.target)
        if let now = door.admitNow(query: query, authorization: head.authorization) {
            return upgraded(head, now)
        }
        let loop = io.loop
        let bound = NIOLoopBound(self, eventLoop: loop)
        Task {
            let admission = await door.admit(query: query, authorization: head.authorization)
            loop.execute {
                let connection = bound.value
                connection.upgraded(head, admission)
            }
        }
    }

    /// Answers the handshake; an admitted connection's pipeline becomes a WebSocket's (what
    /// the client sent after the handshake goes on to it) and this handler leaves.
    private func upgraded(_ head: RawRequestHead,
                          _ admission: Result<WebSocketDoor.Admitted, WebSocketDoor.Refusal>) {
        let door = self.door.webSockets
        switch admission {
        case .failure(let refusal):
            closeAfterAnswer = true
            answer(status: refusal.status, body: ByteBuffer(bytes: RouteSupport.errorBody(refusal.code, refusal.message)))
        case .success(let admitted):
            guard current != nil, io.isActive, let key = head.webSocketKey else { return door.release(admitted) }
            current = nil
            handedOn = true
            idleTimer?.cancel()
            idleTimer = nil
            io.write(WebSocketHandshake.switchingProtocols(key: key))
            let forward = pending
            pending = ByteBuffer()
            if !io.upgrade(admitted, door: door, forward: forward) {
                door.release(admitted)
                io.close()
            }
        }
    }

    // MARK: answers

    private func fail(_ error: ProtocolError) {
        let (status, body) = RouteSupport.failure(error)
        answer(status: status, body: ByteBuffer(bytes: body))
    }

    /// Writes a poll answer; on the connection's loop (``PollConnectionSink``).
    func respond(_ taken: PollAnswer) {
        parked = nil
        release()
        answer(response: PollAnswerBody.response(taken), headSaysClose: false)
    }

    /// Writes a JSON answer that is not a poll's (a new session, an error).
    private func answer(status: Int, body: ByteBuffer) {
        let close = current?.close ?? false
        var response = PollConnectionHandler.responseHead(status: status, length: body.readableBytes, close: close, reserving: body.readableBytes)
        response.writeImmutableBuffer(body)
        answer(response: response, headSaysClose: close)
    }

    /// Writes the whole response to the current request (one buffer, one write), then takes
    /// the next request.
    private func answer(response: ByteBuffer, headSaysClose: Bool) {
        // Only the head's `close` is read: the request (its strings) is not copied.
        guard let asked = current?.close else { return }
        current = nil
        lastActive = .now()
        let close = asked || closeAfterAnswer
        // Closing after it (asked for, or shutting down): the head says so.
        let response = close && !headSaysClose ? PollConnectionHandler.withClose(response) : response
        // Not asked of the channel first: a write on a closed one fails its (absent) promise,
        // and the check was a retain and an atomic load per answer.
        io.write(response)
        if close {
            io.close()
            return
        }
        takeRequests()
        // What the client sent before closing its side is answered; then the connection closes.
        if clientClosed, current == nil, !handedOn { io.close() }
    }

    /// A request line over the head's limit: `414` with the JSON error body, and the connection
    /// closes (what follows it cannot be read as requests).
    private func refuseLongURI() {
        refusedAndClosing = true
        pending = ByteBuffer()
        let body = RouteSupport.errorBody(.tooLarge, "the request line is over 16 KB (a URL that long is not one Warren issues)")
        var response = PollConnectionHandler.responseHead(status: 414, length: body.count, close: true, reserving: body.count)
        response.writeBytes(body)
        io.write(response)
        io.close()
    }

    private func release() {
        guard counted else { return }
        counted = false
        door.metrics.connectionClosed(.poll)
    }

    // MARK: idle connections

    /// One timer per connection, not one per request: when it fires, a connection idle for
    /// `idleTimeout` is closed, otherwise the check moves to when it would be.
    private func scheduleIdleCheck(in delay: TimeAmount) {
        let bound = NIOLoopBound(self, eventLoop: io.loop)
        idleTimer = io.loop.scheduleTask(in: delay) {
            let connection = bound.value
            connection.idleCheck()
        }
    }

    private func idleCheck() {
        guard !handedOn, io.isActive else { return }
        if current != nil { return scheduleIdleCheck(in: door.idleTimeout) }
        let idle = NIODeadline.now() - lastActive
        if idle >= door.idleTimeout { return io.close() }
        scheduleIdleCheck(in: door.idleTimeout - idle)
    }
}

import Foundation
import NIOCore
import WarrenCore

/// One HTTP connection of Warren's edge, whatever serves its socket (``HTTPConnectionIO``: a
/// NIO channel's, or the epoll door's). Its ``HTTPConnectionStateMachine`` frames requests and
/// decides when to read, write, wait and close; this class does what it says and answers each
/// request:
///
/// - `GET /v1/poll/<session>` (a poll), `POST /v1/poll` (a new session) and
///   `POST /v1/messages` (a publish), here: the one way Warren serves them over HTTP;
/// - a WebSocket handshake, checked (RFC 6455), admitted (or refused with its status) and
///   turned into a ``WebSocketConnectionHandler``'s pipeline;
/// - anything else, through hummingbird's router (``RouterEndpoint``).
///
/// An I/O without a NIO channel (the epoll door) hands the connection on, from the request that
/// needs one, to a NIO server with the same edge.
///
/// A poll of a session open on this node with a token verified before is answered on the
/// connection's loop, without a task or a hop; one that is not (the session's first poll
/// here, a token not seen yet, a paused inbox) is readied in a short-lived task
/// (``PollRoutes/preparePoll(query:authorization:session:home:)``) and then taken the same way.
/// New sessions, publishes and router requests run in short-lived tasks; their answers come
/// back to the loop.
///
/// Its I/O calls it on the connection's loop: ``start()``, ``read(_:)``, ``inputClosed()``,
/// ``writabilityChanged(_:)``, ``quiesce()``, ``closed()`` and ``detached()``.
package final class HTTPConnection<IO: HTTPConnectionIO> {
    typealias Request = HTTPConnectionStateMachine.Request

    /// The request being answered: its head's bytes (given back on a hand-on) and the CORS
    /// header lines its answer carries.
    private struct Current {
        var bytes: ByteBuffer
        var cors: String?
    }

    let edge: EdgeContext
    /// The socket.
    let io: IO
    /// Its loop, whose clock the connection's deadlines are on.
    private let loop: any EventLoop
    private var machine: HTTPConnectionStateMachine
    private var timer: Scheduled<Void>?
    private var current: Current?
    /// The long-poll waiting for its answer, counted in `warren_connections{frontend="poll"}`.
    private var parked: (PollOutput, UInt64)?
    /// Where this connection's polls are answered (made at its first poll, dropped when the
    /// connection goes).
    private var sink: PollConnectionSink?
    /// The node's poll service, kept from this connection's first poll (a node has one for its
    /// life): a poll asks only whether the node drains, not the link's and the routes' locks.
    private var service: PollService? {
        didSet { serviceRef = service.map { Unmanaged.passUnretained($0) } }
    }
    /// ``service``, unretained (it is held above): a repeated poll calls it without a retain
    /// and a release. Both loops' polls call the one service, and it is weakly referenced, so
    /// each was an atomic on a reference count in a side table that both cores write.
    private var serviceRef: Unmanaged<PollService>?
    /// The session this connection polled last: its next poll of the same session string takes
    /// it without the node's table of sessions.
    private var lastPolled: PollService.LastPolled?
    /// The last poll taken here with what its parse found, while ``lastPolled`` is its session:
    /// a next poll that repeats it but for its `ack` (``RepeatedPoll``) is taken without
    /// parsing its head, its query or its identity again.
    private var kept: KeptPoll?

    package init(_ edge: EdgeContext, io: IO) {
        self.edge = edge
        self.io = io
        loop = io.loop
        machine = HTTPConnectionStateMachine(settings: edge.settings, budget: edge.budget, now: io.loop.now)
    }

    // MARK: events from the I/O

    /// The connection is open: its idle timer starts.
    package func start() {
        let now = loop.now
        perform(machine.start(now: now), now: now)
    }

    package func read(_ bytes: ByteBuffer) {
        let now = loop.now
        perform(machine.read(bytes, now: now), now: now)
    }

    /// The client closed its side of the connection.
    package func inputClosed() {
        let now = loop.now
        perform(machine.inputClosed(now: now), now: now)
    }

    /// The output went over `http.max_pending_output` (false) or drained (true).
    package func writabilityChanged(_ writable: Bool) {
        let now = loop.now
        perform(machine.writabilityChanged(writable, now: now), now: now)
    }

    /// A graceful shutdown: closed now, or once the answer being made is written.
    package func quiesce() {
        let now = loop.now
        perform(machine.quiesce(now: now), now: now)
    }

    /// The connection closed: a parked poll is answered with nothing taken (what arrives
    /// meanwhile stays buffered for the session's next poll).
    package func closed() {
        machine.closed()
        current = nil
        sink?.gone()
        if let (output, id) = parked { output.wake(parked: id) }
        unpark()
        detached()
    }

    /// The I/O is done with this connection (closed, handed on, or its handler left the
    /// pipeline): it holds nothing more of it.
    package func detached() {
        timer?.cancel()
        timer = nil
        // It holds this connection: dropped with it (a poll parked still holds it until answered).
        sink = nil
    }

    // MARK: actions

    private func perform(_ first: HTTPConnectionStateMachine.Action, now: NIODeadline) {
        var action = first
        while true {
            switch action {
            case .none:
                return
            case .serve(let request):
                dispatch(request)
                action = machine.dispatched(now: now)
            case .write(let bytes):
                io.write(bytes)
                action = machine.next(now: now)
            case .writeAndClose(let bytes):
                io.writeAndCloseOutput(bytes)
                action = machine.next(now: now)
            case .refuse(let refusal):
                io.writeAndCloseOutput(ResponseHead.refusal(refusal))
                action = machine.next(now: now)
            case .close:
                io.close()
                return
            case .stopReading:
                io.stopReading()
                action = machine.next(now: now)
            case .resumeReading:
                io.resumeReading()
                action = machine.next(now: now)
            case .schedule(let deadline):
                timer?.cancel()
                let bound = NIOLoopBound(self, eventLoop: loop)
                timer = loop.scheduleTask(deadline: deadline) {
                    let connection = bound.value
                    let now = connection.loop.now
                    connection.perform(connection.machine.timerFired(now: now), now: now)
                }
                action = machine.next(now: now)
            }
        }
    }

    // MARK: requests

    private func dispatch(_ request: Request) {
        switch request.kind {
        case .repeated(let ack):
            takeRepeated(request.bytes, ack: ack)
        case .head(let head):
            current = Current(bytes: request.bytes, cors: edge.cors?.headerLines(origin: head.origin))
            if let ask = head.webSocket { return webSocket(head, ask, request) }
            guard edge.polls != nil else { return route(head, request) }
            switch Endpoint(head) {
            case .poll(let session): serve(head, session: Self.slice(head.target, session), prepared: false)
            case .create: create(head, body: request.body)
            case .publish: publish(head, body: request.body)
            case .eventStream: eventStream(head, request)
            case .router: route(head, request)
            }
        }
    }

    /// The bytes `range` of `target`, as a substring of it.
    private static func slice(_ target: String, _ range: Range<Int>) -> Substring {
        let utf8 = target.utf8
        return Substring(utf8[utf8.index(utf8.startIndex, offsetBy: range.lowerBound)..<utf8.index(utf8.startIndex, offsetBy: range.upperBound)])
    }

    /// Hands the connection on, from `request` on, to a server with a channel (the epoll door
    /// to NIO). A chunked body the state machine decoded goes as one chunk.
    private func handOn(_ request: Request, head: RawRequestHead) {
        var bytes = request.bytes
        if head.chunked {
            bytes.writeString(String(request.body.readableBytes, radix: 16))
            bytes.writeStaticString("\r\n")
            if request.body.readableBytes > 0 {
                bytes.writeImmutableBuffer(request.body)
                bytes.writeStaticString("\r\n0\r\n")
            }
            bytes.writeStaticString("\r\n")
        } else {
            bytes.writeImmutableBuffer(request.body)
        }
        var rest = machine.takeOver()
        bytes.writeBuffer(&rest)
        current = nil
        detached()
        io.handOn(bytes)
    }

    /// A request for hummingbird's router, in a short-lived task.
    private func route(_ head: RawRequestHead, _ request: Request) {
        guard let channel = io.channel else { return handOn(request, head: head) }
        let router = edge.router
        let loop = io.loop
        let bound = NIOLoopBound(self, eventLoop: loop)
        let headOnly = head.method == .head
        Task {
            let answer = await router.respond(to: head, fields: request.bytes, body: request.body, channel: channel)
            loop.execute {
                let connection = bound.value
                let response = ResponseHead.routed(answer.response, body: answer.body, close: connection.machine.answerCloses, headOnly: headOnly)
                connection.answer(response)
            }
        }
    }

    // MARK: polls

    /// A poll: answered (or parked) here when the session is open on this node and the token
    /// known; otherwise readied in a task first (`prepared` false).
    private func serve(_ head: RawRequestHead, session: Substring, prepared: Bool) {
        if service == nil || edge.isDraining {
            switch edge.service() {
            case .success(let s): service = s
            case .failure(let error):
                service = nil
                return fail(error)
            }
        }
        // Held here for the call: what the poll answers at once may take the next request, whose
        // own parse may set ``service`` again.
        guard let service else { return }
        let authenticator = edge.authenticator
        let query = Query(target: head.target)
        let wait = PollRoutes.nonNegative(query.items["wait"], name: "wait", default: 0)
        let max = PollRoutes.nonNegative(query.items["max"], name: "max", default: edge.maxBatch)
        guard case .success(let wait) = wait, case .success(let max) = max else {
            let error = [wait, max].compactMap { if case .failure(let e) = $0 { e } else { nil } }[0]
            return fail(error)
        }
        guard let known = authenticator.known(query: query, authorization: head.authorization) else {
            return prepared ? fail(ProtocolError(.unauthorized, "the token is not valid", ref: nil)) : prepare(head, session: session, query: query)
        }
        // The head's bytes, kept if the poll is taken here (gone once it parks).
        let template = head.expectsContinue || head.close ? nil : current?.bytes.withUnsafeReadableBytes { RepeatedPoll(head: $0) }
        forget()
        let cors = current?.cors
        let taken = poll(Unmanaged.passUnretained(service), head, session: session, identity: known.identity, wait: wait, max: max,
                         ack: query.items["ack"], prepared: prepared, repeated: false, now: WallClock.milliseconds())
        if taken, let template {
            kept = KeptPoll(head: head, session: session, identity: known.identity, expiresAt: known.expiresAt, wait: wait, max: max,
                            cors: cors)
            machine.keep(template)
        }
    }

    /// Takes a poll that repeats the last one taken here but for its `ack` (``RepeatedPoll``),
    /// with what that one's parse found.
    private func takeRepeated(_ bytes: ByteBuffer, ack: Range<Int>?) {
        guard let kept else { return fail(ProtocolError(.internal, "no poll to repeat", ref: nil)) }
        current = Current(bytes: bytes, cors: kept.cors)
        let now = WallClock.milliseconds()
        guard let serviceRef, !edge.isDraining, kept.expiresAt.map({ $0 > now }) ?? true else {
            // A drain, or a token that ran out since: the slow path says why.
            return reparse(bytes)
        }
        let ackValue = ack.map { bytes.getString(at: bytes.readerIndex + $0.lowerBound, length: $0.count)! }
        poll(serviceRef, kept.head, session: kept.session, identity: kept.identity, wait: kept.wait, max: kept.max, ack: ackValue,
             prepared: false, repeated: true, now: now)
    }

    /// A repeated poll taken the slow way after all: its own head parsed and served.
    private func reparse(_ bytes: ByteBuffer) {
        forget()
        guard case .head(let head) = RawRequestHead.parse(bytes.readableBytesView, limits: edge.settings.head),
              case .poll(let range) = Endpoint(head) else {
            return fail(ProtocolError(.internal, "a repeated poll no longer reads as one", ref: nil))
        }
        serve(head, session: Self.slice(head.target, range), prepared: false)
    }

    private func forget() {
        kept = nil
        machine.keep(nil)
    }

    /// Takes a poll whose identity, `wait` and `max` are known: answered or parked here (true),
    /// or, when the session is not open here for it, readied in a task first (`prepared`
    /// false). `repeated`: the head is the last poll's, not this one's (``takeRepeated(_:ack:)``).
    @discardableResult
    private func poll(_ service: Unmanaged<PollService>, _ head: RawRequestHead, session: Substring, identity: ClientIdentity,
                      wait: Int, max: Int, ack: String?, prepared: Bool, repeated: Bool, now: Int64) -> Bool {
        // The answer may come from the broker's thread or a timer: written on this loop.
        let sink = self.sink ?? PollConnectionSink(self)
        if io.isActive { self.sink = sink }
        let taken = service._withUnsafeGuaranteedRef {
            $0.poll(session: session, user: identity.user, policy: identity.policy, wait: wait, max: max, ack: ack, to: sink,
                    last: &lastPolled, repeated: repeated, now: now)
        }
        switch taken {
        case .elsewhere:
            if repeated, let bytes = current?.bytes {
                reparse(bytes)
            } else if prepared {
                fail(ProtocolError(.unavailable, "the session is being reopened on this node; retry", ref: nil))
            } else {
                forget()
                prepare(head, session: session, query: Query(target: head.target))
            }
            return false
        case .answered:
            return true
        case .parked(let output, let id):
            // Still the request being served (the answer comes through this loop, not before this returns).
            guard current != nil else { return true }
            parked = (output, id)
            edge.metrics.connectionOpened(.poll)
            // The request's bytes are not needed any more (nor their buffer kept).
            current?.bytes = ByteBuffer()
            let now = loop.now
            perform(machine.parked(now: now), now: now)
            return true
        }
    }

    /// Verifies the token and opens the session here in a short-lived task, then takes the poll.
    private func prepare(_ head: RawRequestHead, session: Substring, query: Query) {
        guard let routes = edge.polls else { return }
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

    /// Writes a poll answer; on the connection's loop (``PollConnectionSink``).
    func respond(_ taken: PollAnswer) {
        unpark()
        answer(PollAnswerBody.response(taken, close: machine.answerCloses, extra: current?.cors))
    }

    private func unpark() {
        guard parked != nil else { return }
        parked = nil
        edge.metrics.connectionClosed(.poll)
    }

    // MARK: sessions and publishes

    /// `POST /v1/poll`, in a short-lived task.
    private func create(_ head: RawRequestHead, body: ByteBuffer) {
        guard let routes = edge.polls else { return }
        let home = io.loop
        answerInTask(status: 201) {
            try await routes.createSession(query: Query(target: head.target), authorization: head.authorization, body: body, home: home)
        }
    }

    /// `POST /v1/messages`, in a short-lived task (it waits for the broker's confirm).
    private func publish(_ head: RawRequestHead, body: ByteBuffer) {
        guard let routes = edge.polls else { return }
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
                bound.value.answer(status: answer.status, body: ByteBuffer(bytes: answer.body))
            }
        }
    }

    // MARK: WebSockets

    /// A WebSocket handshake (RFC 6455 §4.2.1): checked, then admitted at once when the
    /// identity is known, else once the token is verified in a short-lived task; then answered
    /// `101` or refused.
    private func webSocket(_ head: RawRequestHead, _ ask: RawRequestHead.WebSocketAsk, _ request: Request) {
        // A refused handshake closes the connection, as WebSocket servers do: the client's next
        // try is a new connection.
        if let refusal = WebSocketHandshake.check(head, ask) {
            machine.closeAfterAnswer()
            return answer(status: refusal.status, body: ByteBuffer(bytes: RouteSupport.errorBody(refusal.code, refusal.message)),
                          header: refusal.header)
        }
        guard let door = edge.webSockets, head.target.utf8.prefix(while: { $0 != UInt8(ascii: "?") }).elementsEqual("/v1/ws".utf8) else {
            machine.closeAfterAnswer()
            return answer(status: 404, body: ByteBuffer(bytes: RouteSupport.errorBody(.notFound, "WebSocket upgrades are served at /v1/ws")))
        }
        guard io.channel != nil else { return handOn(request, head: head) }
        let query = Query(target: head.target)
        if let now = door.admission.admitNow(query: query, authorization: head.authorization) {
            return upgraded(head, now, door: door)
        }
        let loop = io.loop
        let bound = NIOLoopBound(self, eventLoop: loop)
        Task {
            let admission = await door.admission.admit(query: query, authorization: head.authorization)
            loop.execute {
                bound.value.upgraded(head, admission, door: door)
            }
        }
    }

    /// Answers the handshake; an admitted connection's pipeline becomes a WebSocket's (what
    /// the client sent after the handshake goes on to it) and this connection is done.
    private func upgraded(_ head: RawRequestHead, _ admission: Result<ConnectionAdmission.Admitted, ConnectionAdmission.Refusal>, door: WebSocketDoor) {
        switch admission {
        case .failure(let refusal):
            machine.closeAfterAnswer()
            answer(status: refusal.status, body: ByteBuffer(bytes: RouteSupport.errorBody(refusal.code, refusal.message)))
        case .success(let admitted):
            guard current != nil, io.isActive, let key = head.webSocket?.key else { return door.admission.release(admitted) }
            current = nil
            io.write(WebSocketHandshake.switchingProtocols(key: key))
            let forward = machine.takeOver()
            detached()
            if !io.upgrade(installing: { try door.install(admitted, on: $0) }, forward: forward) {
                door.admission.release(admitted)
                io.close()
            }
        }
    }

    // MARK: event streams

    /// `GET /v1/sse`: admitted (at once when the identity is known, else once the token is
    /// verified in a short-lived task), its patterns checked, then answered `200` and the
    /// connection made a stream's (``EventStreamDoor``); or refused with an HTTP error.
    private func eventStream(_ head: RawRequestHead, _ request: Request) {
        guard let door = edge.eventStreams else { return route(head, request) }
        guard io.channel != nil else { return handOn(request, head: head) }
        let query = Query(target: head.target)
        if let now = door.admission.admitNow(query: query, authorization: head.authorization) {
            return streamed(head, query, now, door: door)
        }
        let loop = io.loop
        let bound = NIOLoopBound(self, eventLoop: loop)
        Task {
            let admission = await door.admission.admit(query: query, authorization: head.authorization)
            loop.execute { bound.value.streamed(head, query, admission, door: door) }
        }
    }

    private func streamed(_ head: RawRequestHead, _ query: Query, _ admission: Result<ConnectionAdmission.Admitted, ConnectionAdmission.Refusal>,
                          door: EventStreamDoor) {
        switch admission {
        case .failure(let refusal):
            answer(status: refusal.status, body: ByteBuffer(bytes: RouteSupport.errorBody(refusal.code, refusal.message)))
        case .success(let admitted):
            guard current != nil, io.isActive else { return door.admission.release(admitted) }
            switch EventStreamDoor.ask(query: query, lastEventID: head.lastEventID, rules: admitted.identity.rules,
                                       maxSubscriptions: admitted.runtime.limits.maxSubscriptions) {
            case .failure(let error):
                door.admission.release(admitted)
                fail(error)
            case .success(let ask):
                let cors = current?.cors
                current = nil
                io.write(EventStreamDoor.head(extra: cors))
                let forward = machine.takeOver()
                detached()
                if !io.upgrade(installing: { try door.install(admitted, ask: ask, on: $0) }, forward: forward) {
                    door.admission.release(admitted)
                    io.close()
                }
            }
        }
    }

    // MARK: answers

    private func fail(_ error: ProtocolError) {
        let (status, body) = RouteSupport.failure(error)
        answer(status: status, body: ByteBuffer(bytes: body))
    }

    /// A JSON answer (a new session, a publish, an error), with the request's CORS lines.
    private func answer(status: Int, body: ByteBuffer, header: String? = nil) {
        let extra = [current?.cors, header].compactMap { $0 }
        answer(ResponseHead.json(status: status, body: body, close: machine.answerCloses,
                                 extra: extra.isEmpty ? nil : extra.joined(separator: "\r\n")))
    }

    /// The whole response to the request being served: written, and the next request taken.
    private func answer(_ response: ByteBuffer) {
        current = nil
        let now = loop.now
        perform(machine.answered(response, now: now), now: now)
    }
}

import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import WarrenCore

/// What the event-loop poll path needs from the frontend.
struct PollFastPathContext: Sendable {
    let routes: PollRoutes
    /// CORS is configured: requests from other origins take the router (its middleware answers them).
    let cors: Bool

    var authenticator: Authenticator { routes.authenticator }
    var maxBatch: Int { routes.configuration.poll.maxBatch }
    var maxBodyBytes: Int { routes.support.maxBodyBytes }
    /// The node's poll service, nil while the broker link is not up or the node drains.
    func service() -> PollService? { routes.readyService() }
}

/// Serves a poller's connection without hummingbird: `POST /v1/poll` (a new session) and
/// `GET /v1/poll/<session>` are answered here, everything else (acks, deletes, publishes,
/// cross-origin requests, and a poll while the node is not ready) goes on to hummingbird.
///
/// A poll of a session open on this node with a token verified before is answered on the
/// connection's event loop, without a task or a hop; one that is not (the session's first
/// poll here, a token not seen yet, a paused inbox) is readied in a short-lived task
/// (``PollRoutes/preparePoll(query:authorization:session:)``) and then taken the same way.
/// Session creation runs in a short-lived task too.
///
/// Measured: hummingbird's request path (an async channel, a task per connection, two thread
/// hops per request, the router's character-wise matching of a path that carries a session
/// string of a few hundred bytes) cost Warren about 145 µs of CPU per poll answer against
/// Nchan's 30; and the task hummingbird keeps per connection holds the task-allocator slabs
/// its deepest request needed for as long as the connection lives (~20 KB after a session
/// was created through the router). Here a poller's connection never wakes that task.
///
/// It sits after hummingbird's ``HTTPConnectionStateHandler`` (so keep-alive and idle
/// timeouts see every request and response) and before the async channel. Order holds:
/// it answers only when no request it passed on is still being answered, and holds what a
/// pipelining client sends while its own answer is pending.
final class PollFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// A request this handler answers.
    private enum Taken {
        case poll(HTTPRequest, session: String)
        case create(HTTPRequest)
    }

    let fast: PollFastPathContext
    /// Requests passed on whose response has not ended yet.
    private var upstream = 0
    /// A request being read (its head seen, its end not yet).
    private var reading: Taken?
    /// The body of a `POST /v1/poll` being read; nil once it is over the limit.
    private var body: ByteBuffer? = ByteBuffer()
    /// This handler's own answer is pending.
    private var answering = false
    private var parked: (PollOutput, UInt64)?
    /// Parts that came while `answering`, replayed in order afterwards.
    private var held: [NIOAny] = []
    /// The user whose connection slot an answer holds.
    private var slot: (user: String, service: PollService)?

    /// Told when the connection needs hummingbird's task (nil outside a server's pipeline).
    private var gate: ConnectionTaskGate?

    init(_ fast: PollFastPathContext) { self.fast = fast }

    func handlerAdded(context: ChannelHandlerContext) {
        gate = try? context.pipeline.syncOperations.handler(type: ConnectionTaskGate.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if answering {
            held.append(data)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head):
            if upstream == 0, let taken = take(head) {
                reading = taken
                body = ByteBuffer()
                gate?.pollerRequest()
            } else {
                upstream += 1
                gate?.need()
                context.fireChannelRead(data)
            }
        case .body(let chunk):
            guard let taken = reading else { return context.fireChannelRead(data) }
            if case .create = taken, body != nil {
                if body!.readableBytes + chunk.readableBytes > fast.maxBodyBytes { body = nil } else { body!.writeImmutableBuffer(chunk) }
            }
        case .end:
            guard let taken = reading else { return context.fireChannelRead(data) }
            reading = nil
            switch taken {
            case .poll(let head, let session): serve(context, head, session: session, prepared: false)
            case .create(let head): create(context, head)
            }
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { upstream -= 1 }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A parked poll whose client went: answered now with nothing taken.
        if let (output, id) = parked { output.wake(parked: id) }
        context.fireChannelInactive()
    }

    private func take(_ head: HTTPRequest) -> Taken? {
        guard let path = head.path, path.utf8.starts(with: "/v1/poll".utf8), !(fast.cors && head.headerFields[.origin] != nil) else {
            return nil
        }
        let rest = path.utf8.dropFirst(8).prefix { $0 != UInt8(ascii: "?") }
        if rest.isEmpty { return head.method == .post ? .create(head) : nil }
        guard head.method == .get, rest.first == UInt8(ascii: "/") else { return nil }
        let session = rest.dropFirst()
        guard !session.isEmpty, !session.contains(UInt8(ascii: "/")) else { return nil }
        return .poll(head, session: String(decoding: session, as: UTF8.self))
    }

    /// A poll: answered (or parked) here when the session is open on this node and the token
    /// known; otherwise readied in a task first (`prepared` false), or handed to the router.
    private func serve(_ context: ChannelHandlerContext, _ head: HTTPRequest, session: String, prepared: Bool) {
        let query = Query(target: head.path ?? "")
        guard let service = fast.service() else { return passOn(context, head) }
        let wait = PollRoutes.nonNegative(query.items["wait"], name: "wait", default: 0)
        let max = PollRoutes.nonNegative(query.items["max"], name: "max", default: fast.maxBatch)
        guard case .success(let wait) = wait, case .success(let max) = max else {
            let error = [wait, max].compactMap { if case .failure(let e) = $0 { e } else { nil } }[0]
            return fail(context, error)
        }
        guard let identity = fast.authenticator.knownIdentity(query: query, authorization: head.headerFields[.authorization]) else {
            return prepared ? passOn(context, head) : prepare(context, head, session: session, query: query)
        }
        let users = service.runtime.users
        guard users.openConnection(identity.user) else {
            service.runtime.metrics.limitHit(.poll, .connections)
            return fail(context, ProtocolError(.rateLimited, "at most \(users.maxConnections) connections per user", ref: nil))
        }
        service.runtime.metrics.connectionOpened(.poll)
        slot = (identity.user, service)
        answering = true
        let channel = context.channel
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        // The answer may come from the broker's thread or a timer: written on this loop.
        let taken = service.pollOnLoop(session: session, user: identity.user, wait: wait, max: max, ack: query.items["ack"],
                                       loop: loop, alive: { channel.isActive }) { items, cursor in
            loop.execute {
                let (handler, context) = bound.value
                handler.respond(context, items, cursor)
            }
        }
        switch taken {
        case .elsewhere:
            release()
            answering = false
            if prepared { passOn(context, head) } else { prepare(context, head, session: session, query: query) }
        case .answered:
            break
        case .parked(let output, let id):
            // The answer may have come already (from another thread, queued to this loop).
            if answering { parked = (output, id) }
        }
    }

    /// Verifies the token and opens the session here in a short-lived task, then takes the poll.
    private func prepare(_ context: ChannelHandlerContext, _ head: HTTPRequest, session: String, query: Query) {
        answering = true
        let routes = fast.routes
        let authorization = head.headerFields[.authorization]
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        Task {
            let failure: (status: Int, body: [UInt8])?
            do {
                try await routes.preparePoll(query: query, authorization: authorization, session: session)
                failure = nil
            } catch {
                failure = RouteSupport.failure(error)
            }
            loop.execute {
                let (handler, context) = bound.value
                handler.answering = false
                if let failure {
                    handler.answer(context, status: failure.status, body: failure.body)
                } else {
                    handler.serve(context, head, session: session, prepared: true)
                    if !handler.answering { handler.replayHeld(context) }
                }
            }
        }
    }

    /// `POST /v1/poll`, in a short-lived task.
    private func create(_ context: ChannelHandlerContext, _ head: HTTPRequest) {
        answering = true
        let routes = fast.routes
        let query = Query(target: head.path ?? "")
        let authorization = head.headerFields[.authorization]
        let body = self.body
        self.body = ByteBuffer()
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        Task {
            let answer: (status: Int, body: [UInt8])
            do {
                guard let body else { throw routes.support.tooLarge }
                answer = (201, try await routes.createSession(query: query, authorization: authorization, body: body))
            } catch {
                answer = RouteSupport.failure(error)
            }
            loop.execute {
                let (handler, context) = bound.value
                handler.answer(context, status: answer.status, body: answer.body)
            }
        }
    }

    private func fail(_ context: ChannelHandlerContext, _ error: ProtocolError) {
        let (status, body) = RouteSupport.failure(error)
        answer(context, status: status, body: body)
    }

    /// Writes a poll answer; on the connection's loop.
    fileprivate func respond(_ context: ChannelHandlerContext, _ items: [PollItem], _ cursor: String) {
        parked = nil
        release()
        write(context, status: .ok, body: PollAnswerBody.make(items, cursor: cursor))
        answering = false
        replayHeld(context)
    }

    /// Writes a JSON answer that is not a poll's (a new session, an error).
    private func answer(_ context: ChannelHandlerContext, status: Int, body: [UInt8]) {
        write(context, status: .init(code: status), body: ByteBuffer(bytes: body))
        answering = false
        replayHeld(context)
    }

    private func write(_ context: ChannelHandlerContext, status: HTTPResponse.Status, body: ByteBuffer) {
        guard context.channel.isActive else { return }
        let head = HTTPResponse(status: status, headerFields: [.contentType: "application/json", .contentLength: String(body.readableBytes)])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Replays what a pipelining client sent while an answer was pending.
    private func replayHeld(_ context: ChannelHandlerContext) {
        guard !held.isEmpty else { return }
        let replay = held
        held.removeAll()
        for data in replay { channelRead(context: context, data: data) }
        // Outside a read cycle: hummingbird's async channel hands reads on at read-complete.
        context.fireChannelReadComplete()
    }

    private func release() {
        guard let (user, service) = slot else { return }
        slot = nil
        service.runtime.users.closeConnection(user)
        service.runtime.metrics.connectionClosed(.poll)
    }

    /// Hands a poll to hummingbird (the router answers it, or says why not).
    private func passOn(_ context: ChannelHandlerContext, _ head: HTTPRequest) {
        upstream += 1
        gate?.need()
        context.fireChannelRead(wrapInboundOut(.head(head)))
        context.fireChannelRead(wrapInboundOut(.end(nil)))
    }
}

/// Puts a ``PollFastPath`` after hummingbird's ``HTTPConnectionStateHandler`` once the
/// connection's HTTP pipeline is complete (at its first request), then leaves. Added through
/// `HTTP1Channel.Configuration.additionalChannelHandlers`, which places handlers before the
/// state handler.
final class PollFastPathInstaller: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    let fast: PollFastPathContext

    /// Told when the connection needs hummingbird's task (nil outside a server's pipeline).
    private var gate: ConnectionTaskGate?

    init(_ fast: PollFastPathContext) { self.fast = fast }

    func handlerAdded(context: ChannelHandlerContext) {
        gate = try? context.pipeline.syncOperations.handler(type: ConnectionTaskGate.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let pipeline = context.pipeline.syncOperations
        if let state = try? pipeline.handler(type: HTTPConnectionStateHandler.self) {
            try? pipeline.addHandler(PollFastPath(fast), position: .after(state))
        }
        context.fireChannelRead(data)
        pipeline.removeHandler(context: context, promise: nil)
    }
}

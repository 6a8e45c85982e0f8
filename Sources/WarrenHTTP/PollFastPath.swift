import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import WarrenCore

/// What the event-loop poll path needs from the frontend.
struct PollFastPathContext: Sendable {
    let authenticator: Authenticator
    /// The node's poll service, nil while the broker link is not up or the node drains.
    let service: @Sendable () -> PollService?
    let maxBatch: Int
    /// CORS is configured: requests from other origins take the router (its middleware answers them).
    let cors: Bool
}

/// Answers `GET /v1/poll/<session>` for a session already open on this node on the
/// connection's event loop, without the router, a task or a hop per request; everything
/// else (and any poll it cannot answer that way: the session's first poll here, a paused
/// inbox, a token not yet verified, a bad parameter, a connection over its limit, a
/// cross-origin request) goes on to hummingbird as before.
///
/// Measured: hummingbird's request path (an async channel, a task per connection, two thread
/// hops per request, the router's character-wise matching of a path that carries a session
/// string of a few hundred bytes) cost Warren about 145 µs of CPU per poll answer against
/// Nchan's 30 (BENCHMARKS.md). The answer is the same: the same ``PollService`` session,
/// buffer, leases and cursors, and the same JSON.
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

    let fast: PollFastPathContext
    /// Requests passed on whose response has not ended yet.
    private var upstream = 0
    /// A poll being read (its head seen, its end not yet).
    private var reading: HTTPRequest?
    /// This handler's own answer is pending.
    private var answering = false
    private var parked: (PollOutput, UInt64)?
    /// Parts that came while `answering`, replayed in order afterwards.
    private var held: [NIOAny] = []
    /// The user whose connection slot an answer holds.
    private var slot: (user: String, service: PollService)?

    init(_ fast: PollFastPathContext) { self.fast = fast }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if answering {
            held.append(data)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head):
            if upstream == 0, isCandidate(head) {
                reading = head
            } else {
                upstream += 1
                context.fireChannelRead(data)
            }
        case .body:
            if reading == nil { context.fireChannelRead(data) }
        case .end:
            if let head = reading {
                reading = nil
                serve(context, head)
            } else {
                context.fireChannelRead(data)
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

    private func isCandidate(_ head: HTTPRequest) -> Bool {
        guard head.method == .get, let path = head.path, path.utf8.starts(with: "/v1/poll/".utf8) else { return false }
        let rest = path.utf8.dropFirst(9).prefix { $0 != UInt8(ascii: "?") }
        guard !rest.isEmpty, !rest.contains(UInt8(ascii: "/")) else { return false }
        return !(fast.cors && head.headerFields[.origin] != nil)
    }

    private func serve(_ context: ChannelHandlerContext, _ head: HTTPRequest) {
        let path = head.path ?? ""
        let query = Query(target: path)
        let session = String(decoding: path.utf8.dropFirst(9).prefix { $0 != UInt8(ascii: "?") }, as: UTF8.self)
        guard let service = fast.service(),
              let identity = fast.authenticator.knownIdentity(query: query, authorization: head.headerFields[.authorization]),
              let wait = Self.nonNegative(query.items["wait"], default: 0),
              let max = Self.nonNegative(query.items["max"], default: fast.maxBatch),
              service.runtime.users.openConnection(identity.user) else {
            return passOn(context, head)
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
            passOn(context, head)
        case .answered:
            break
        case .parked(let output, let id):
            // The answer may have come already (from another thread, queued to this loop).
            if answering { parked = (output, id) }
        }
    }

    /// Writes an answer; on the connection's loop.
    fileprivate func respond(_ context: ChannelHandlerContext, _ items: [PollItem], _ cursor: String) {
        parked = nil
        release()
        answering = false
        if context.channel.isActive {
            let body = PollAnswerBody.make(items, cursor: cursor)
            let head = HTTPResponse(status: .ok, headerFields: [.contentType: "application/json",
                                                                .contentLength: String(body.readableBytes)])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(body)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
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
        context.fireChannelRead(wrapInboundOut(.head(head)))
        context.fireChannelRead(wrapInboundOut(.end(nil)))
    }

    static func nonNegative(_ raw: String?, default value: Int) -> Int? {
        guard let raw else { return value }
        guard let n = Int(raw), n >= 0 else { return nil }
        return n
    }
}

/// Puts a ``PollFastPath`` after hummingbird's ``HTTPConnectionStateHandler`` once the
/// connection's HTTP pipeline is complete (at its first request), then leaves. Added through
/// `HTTP1Channel.Configuration.additionalChannelHandlers`, which places handlers before the
/// state handler.
final class PollFastPathInstaller: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    let fast: PollFastPathContext

    init(_ fast: PollFastPathContext) { self.fast = fast }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let pipeline = context.pipeline.syncOperations
        if let state = try? pipeline.handler(type: HTTPConnectionStateHandler.self) {
            try? pipeline.addHandler(PollFastPath(fast), position: .after(state))
        }
        context.fireChannelRead(data)
        pipeline.removeHandler(context: context, promise: nil)
    }
}

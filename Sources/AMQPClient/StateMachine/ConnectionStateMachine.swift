import NIOCore

/// The connection-level protocol (channel 0) as a pure value: events in, actions out.
///
/// It owns the handshake, tune negotiation, heartbeats, `connection.blocked`
/// and close in both directions. Time is passed in, so heartbeat behaviour is
/// tested with an injected clock. Channel frames are not its business: once open,
/// it only says whether they may flow.
public struct ConnectionStateMachine: Sendable {
    /// What we ask for and who we are.
    public struct Configuration: Sendable {
        public var username: String
        public var password: String
        public var vhost: String
        public var clientProperties: FieldTable
        /// Seconds we ask for; 0 = whatever the server proposes.
        public var heartbeat: UInt16
        public var channelMax: UInt16
        public var frameMax: UInt32

        public init(username: String, password: String, vhost: String, clientProperties: FieldTable = [:],
                    heartbeat: UInt16 = 60, channelMax: UInt16 = 2047, frameMax: UInt32 = 131_072) {
            self.username = username
            self.password = password
            self.vhost = vhost
            self.clientProperties = clientProperties
            self.heartbeat = heartbeat
            self.channelMax = channelMax
            self.frameMax = frameMax
        }
    }

    public enum State: Sendable, Equatable {
        case initialized
        case awaitingStart
        case awaitingTune
        case awaitingOpenOk(NegotiatedParameters)
        case open(NegotiatedParameters)
        /// We sent `connection.close` and wait for `close-ok`.
        case closing(AMQPError)
        case closed(AMQPError)
    }

    /// What the handler must do.
    public enum Action: Sendable, Equatable {
        case none
        /// Write the 8-byte protocol header.
        case sendProtocolHeader
        case send([AMQPFrame])
        /// The handshake is done: channels may open, heartbeats start.
        case established(NegotiatedParameters)
        /// Write `frames` (possibly none), then close the socket and fail everything with the error.
        case closeSocket(sending: [AMQPFrame], error: AMQPError)
        /// Blocked or unblocked by the broker (resource alarm).
        case blockedChanged(reason: String?)
    }

    public enum HeartbeatAction: Sendable, Equatable {
        case none
        case sendHeartbeat
        /// Nothing was read for two intervals.
        case peerDead
    }

    public private(set) var state: State = .initialized
    public private(set) var blockedReason: String?
    let configuration: Configuration
    private var lastRead: NIODeadline
    private var lastWrite: NIODeadline
    private var heldPublishes: [AMQPFrame] = []

    public init(configuration: Configuration, now: NIODeadline) {
        self.configuration = configuration
        self.lastRead = now
        self.lastWrite = now
    }

    /// Frames may exceed this size only once tune has raised it.
    public var maxFrameSize: UInt32 {
        switch state {
        case .open(let p), .awaitingOpenOk(let p): return p.frameMax
        default: return configuration.frameMax
        }
    }

    public var isOpen: Bool { if case .open = state { return true } else { return false } }

    // MARK: events

    public mutating func connected() -> Action {
        guard case .initialized = state else { return .none }
        state = .awaitingStart
        return .sendProtocolHeader
    }

    /// Any bytes from the peer count as a sign of life.
    public mutating func bytesRead(now: NIODeadline) { lastRead = now }
    /// Any bytes to the peer make a heartbeat unnecessary.
    public mutating func bytesWritten(now: NIODeadline) { lastWrite = now }

    /// A frame on channel 0 (heartbeats included).
    public mutating func frameReceived(_ frame: AMQPFrame) -> Action {
        switch frame {
        case .heartbeat:
            return .none
        case .method(0, let method):
            return methodReceived(method)
        case .header(0, _), .body(0, _):
            return protocolError(.unexpectedFrame("content frame on channel 0"))
        default:
            return protocolError(.unexpectedFrame("frame for channel \(frame.channel) on connection"))
        }
    }

    /// A frame for a channel arrived before the connection was open.
    public mutating func channelFrameBeforeOpen(_ channel: UInt16) -> Action {
        protocolError(.unexpectedFrame("frame for channel \(channel) before the connection is open"))
    }

    private mutating func methodReceived(_ method: AMQPMethod) -> Action {
        switch (state, method) {
        case (.awaitingStart, .connectionStart(let start)):
            guard start.versionMajor == 0, start.versionMinor == 9 else {
                return closeSocket(.connectionFailed("unsupported protocol version \(start.versionMajor)-\(start.versionMinor)"))
            }
            let mechanisms = start.mechanisms.split(separator: " ")
            guard mechanisms.contains("PLAIN") else {
                return closeSocket(.connectionFailed("server offers no PLAIN mechanism (\(start.mechanisms))"))
            }
            serverProperties = start.serverProperties
            state = .awaitingTune
            let response = [0] + Array(configuration.username.utf8) + [0] + Array(configuration.password.utf8)
            return .send([.method(channel: 0, .connectionStartOk(ConnectionStartOk(
                clientProperties: clientProperties, mechanism: "PLAIN", response: response, locale: "en_US")))])

        case (.awaitingTune, .connectionSecure):
            // PLAIN needs no challenge round; a server that asks is one we cannot satisfy.
            return protocolError(.commandInvalid("connection.secure is not used with PLAIN"))

        case (.awaitingTune, .connectionTune(let proposal)):
            let params = NegotiatedParameters(
                channelMax: Self.negotiate(configuration.channelMax, proposal.channelMax),
                frameMax: max(AMQPFrame.minimumFrameMax,
                              Self.negotiate(configuration.frameMax, proposal.frameMax)),
                heartbeat: Self.negotiate(configuration.heartbeat, proposal.heartbeat),
                serverProperties: serverProperties)
            state = .awaitingOpenOk(params)
            return .send([
                .method(channel: 0, .connectionTuneOk(ConnectionTune(channelMax: params.channelMax, frameMax: params.frameMax,
                                                                     heartbeat: params.heartbeat))),
                .method(channel: 0, .connectionOpen(vhost: configuration.vhost)),
            ])

        case (.awaitingOpenOk(let params), .connectionOpenOk):
            state = .open(params)
            return .established(params)

        case (.open, .connectionBlocked(let reason)):
            blockedReason = reason
            return .blockedChanged(reason: reason)

        case (.open, .connectionUnblocked):
            blockedReason = nil
            let held = heldPublishes
            heldPublishes = []
            return held.isEmpty ? .blockedChanged(reason: nil) : .send(held)

        case (.open, .connectionUpdateSecretOk):
            return .none

        case (.closing(let error), .connectionCloseOk):
            state = .closed(error)
            return .closeSocket(sending: [], error: error)

        case (.closing, .connectionClose):
            // Both sides closed at once: answer and go.
            if case .closing(let error) = state {
                state = .closed(error)
                return .closeSocket(sending: [.method(channel: 0, .connectionCloseOk)], error: error)
            }
            return .none

        case (.closing, _):
            // After sending close, everything but close / close-ok is discarded.
            return .none

        case (.closed, _):
            return .none

        case (_, .connectionClose(let args)):
            let error: AMQPError
            if case .awaitingTune = state, args.replyCode == ReplyCode.accessRefused {
                error = .authenticationFailed(args.replyText)
            } else if case .awaitingOpenOk = state, args.replyCode == ReplyCode.accessRefused || args.replyCode == ReplyCode.notAllowed {
                error = .authenticationFailed(args.replyText)
            } else {
                error = .connectionClosedByServer(args)
            }
            state = .closed(error)
            return .closeSocket(sending: [.method(channel: 0, .connectionCloseOk)], error: error)

        default:
            return protocolError(.commandInvalid("unexpected \(method.ids.classID).\(method.ids.methodID) on channel 0"))
        }
    }

    /// The decoder or a channel found a breach: close the connection with its reply code.
    public mutating func protocolError(_ error: AMQPProtocolError) -> Action {
        switch state {
        case .closed, .closing:
            return .none
        case .initialized, .awaitingStart:
            // No AMQP conversation yet: there is nobody to send connection.close to.
            state = .closed(.protocolViolation(error))
            return .closeSocket(sending: [], error: .protocolViolation(error))
        default:
            state = .closing(.protocolViolation(error))
            return .send([.method(channel: 0, .connectionClose(CloseArguments(replyCode: error.replyCode,
                                                                              replyText: error.description)))])
        }
    }

    /// The user asked to close.
    public mutating func close() -> Action {
        switch state {
        case .open, .awaitingOpenOk:
            state = .closing(.closedByUser)
            return .send([.method(channel: 0, .connectionClose(CloseArguments(replyCode: ReplyCode.success, replyText: "goodbye")))])
        case .closing, .closed:
            return .none
        default:
            return closeSocket(.closedByUser)
        }
    }

    /// The socket went away.
    public mutating func socketClosed() -> AMQPError {
        switch state {
        case .closed(let error), .closing(let error):
            state = .closed(error)
            return error
        default:
            let error = AMQPError.connectionLost("socket closed")
            state = .closed(error)
            return error
        }
    }

    /// The socket failed with an I/O error.
    public mutating func socketError(_ description: String) -> Action {
        switch state {
        case .closed: return .none
        case .closing(let error):
            state = .closed(error)
            return .closeSocket(sending: [], error: error)
        default:
            return closeSocket(.connectionLost(description))
        }
    }

    /// Publishes are held while the broker says we are blocked, so that the
    /// acks and other methods we send still reach it (RabbitMQ stops reading a
    /// blocked connection at its next publish).
    public mutating func outboundPublish(_ frames: [AMQPFrame]) -> Action {
        if blockedReason != nil {
            heldPublishes.append(contentsOf: frames)
            return .none
        }
        return .send(frames)
    }

    /// Called periodically; decides whether to send a heartbeat or give the peer up.
    public mutating func heartbeatTick(now: NIODeadline) -> HeartbeatAction {
        guard case .open(let params) = state, params.heartbeat > 0 else { return .none }
        let interval = TimeAmount.seconds(Int64(params.heartbeat))
        if now - lastRead >= interval * 2 {
            return .peerDead
        }
        if now - lastWrite >= TimeAmount.nanoseconds(interval.nanoseconds / 2) {
            lastWrite = now
            return .sendHeartbeat
        }
        return .none
    }

    /// Fails the connection because the peer went silent.
    public mutating func heartbeatTimedOut() -> Action {
        closeSocket(.heartbeatTimeout)
    }

    private mutating func closeSocket(_ error: AMQPError) -> Action {
        state = .closed(error)
        return .closeSocket(sending: [], error: error)
    }

    // MARK: helpers

    private var serverProperties: FieldTable = [:]

    private var clientProperties: FieldTable {
        var props = configuration.clientProperties
        props["product"] = props["product"] ?? "warren-amqp"
        props["platform"] = "Swift"
        props["capabilities"] = .table([
            "publisher_confirms": true,
            "basic.nack": true,
            "consumer_cancel_notify": true,
            "connection.blocked": true,
            "authentication_failure_close": true,
            "per_consumer_qos": true,
            "exchange_exchange_bindings": true,
        ])
        return props
    }

    /// Tune rule: 0 from either side means "take the other side's value";
    /// otherwise the smaller wins (so heartbeats are off only when both say 0).
    static func negotiate<T: FixedWidthInteger>(_ client: T, _ server: T) -> T {
        if client == 0 { return server }
        if server == 0 { return client }
        return min(client, server)
    }
}

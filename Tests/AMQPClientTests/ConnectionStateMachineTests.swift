@testable import AMQPClient
import NIOCore
import Testing

@Suite struct ConnectionStateMachineTests {
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    static let config = ConnectionStateMachine.Configuration(username: "guest", password: "pw", vhost: "/", heartbeat: 10,
                                                             channelMax: 100, frameMax: 65536)

    /// Drives a machine through the handshake with the given server tune proposal.
    static func open(tune: ConnectionTune = ConnectionTune(channelMax: 2047, frameMax: 131_072, heartbeat: 60),
                     configuration: ConnectionStateMachine.Configuration = config) -> ConnectionStateMachine
    {
        var m = ConnectionStateMachine(configuration: configuration, now: t0)
        _ = m.connected()
        _ = m.frameReceived(.method(channel: 0, .connectionStart(ConnectionStart())))
        _ = m.frameReceived(.method(channel: 0, .connectionTune(tune)))
        _ = m.frameReceived(.method(channel: 0, .connectionOpenOk))
        return m
    }

    @Test func handshakeEventByEvent() throws {
        var m = ConnectionStateMachine(configuration: Self.config, now: Self.t0)
        #expect(m.connected() == .sendProtocolHeader)
        #expect(m.state == .awaitingStart)

        guard case .send(let startOk) = m.frameReceived(.method(channel: 0, .connectionStart(ConnectionStart()))),
              case .method(0, .connectionStartOk(let ok)) = startOk.first
        else { Issue.record("expected start-ok"); return }
        #expect(ok.mechanism == "PLAIN")
        #expect(ok.response == [0] + Array("guest".utf8) + [0] + Array("pw".utf8))
        guard case .table(let caps) = ok.clientProperties["capabilities"] else { Issue.record("no capabilities"); return }
        for cap in ["publisher_confirms", "basic.nack", "consumer_cancel_notify", "connection.blocked",
                    "authentication_failure_close", "per_consumer_qos"] {
            #expect(caps[cap] == .bool(true), "capability \(cap)")
        }

        let tuneAction = m.frameReceived(.method(channel: 0, .connectionTune(ConnectionTune(channelMax: 2047, frameMax: 131_072, heartbeat: 60))))
        let expectedTune = ConnectionTune(channelMax: 100, frameMax: 65536, heartbeat: 10)
        #expect(tuneAction == .send([.method(channel: 0, .connectionTuneOk(expectedTune)),
                                     .method(channel: 0, .connectionOpen(vhost: "/"))]))
        guard case .established(let params) = m.frameReceived(.method(channel: 0, .connectionOpenOk)) else {
            Issue.record("expected established"); return
        }
        #expect(params.heartbeat == 10 && params.channelMax == 100 && params.frameMax == 65536)
        #expect(m.isOpen)
    }

    @Test(arguments: [
        (UInt16(0), UInt16(60), UInt16(60)), (60, 0, 60), (10, 60, 10), (60, 10, 10), (0, 0, 0),
    ])
    func tuneNegotiation(client: UInt16, server: UInt16, expected: UInt16) {
        #expect(ConnectionStateMachine.negotiate(client, server) == expected)
    }

    @Test func frameMaxIsNeverBelow4096() {
        var c = Self.config
        c.frameMax = 1024
        var m = ConnectionStateMachine(configuration: c, now: Self.t0)
        _ = m.connected()
        _ = m.frameReceived(.method(channel: 0, .connectionStart(ConnectionStart())))
        let action = m.frameReceived(.method(channel: 0, .connectionTune(ConnectionTune(channelMax: 0, frameMax: 0, heartbeat: 0))))
        guard case .send(let frames) = action, case .method(_, .connectionTuneOk(let t)) = frames.first else {
            Issue.record("expected tune-ok"); return
        }
        #expect(t.frameMax == 4096)
        #expect(t.channelMax == 100)
    }

    @Test func unsupportedMechanismFails() {
        var m = ConnectionStateMachine(configuration: Self.config, now: Self.t0)
        _ = m.connected()
        guard case .closeSocket(_, .connectionFailed) = m.frameReceived(.method(channel: 0, .connectionStart(ConnectionStart(mechanisms: "EXTERNAL")))) else {
            Issue.record("expected failure"); return
        }
    }

    @Test func authenticationFailureIsTyped() {
        var m = ConnectionStateMachine(configuration: Self.config, now: Self.t0)
        _ = m.connected()
        _ = m.frameReceived(.method(channel: 0, .connectionStart(ConnectionStart())))
        let action = m.frameReceived(.method(channel: 0, .connectionClose(CloseArguments(replyCode: 403, replyText: "ACCESS_REFUSED"))))
        #expect(action == .closeSocket(sending: [.method(channel: 0, .connectionCloseOk)], error: .authenticationFailed("ACCESS_REFUSED")))
    }

    @Test func heartbeatsWithInjectedClock() {
        var m = Self.open() // heartbeat negotiated to 10 s
        let s = { (x: Int64) in Self.t0 + .milliseconds(x) }
        #expect(m.heartbeatTick(now: s(4000)) == .none)
        #expect(m.heartbeatTick(now: s(5000)) == .sendHeartbeat)   // nothing written for half the interval
        #expect(m.heartbeatTick(now: s(6000)) == .none)            // the heartbeat counted as a write
        m.bytesWritten(now: s(9000))
        #expect(m.heartbeatTick(now: s(13_000)) == .none)
        m.bytesRead(now: s(15_000))
        #expect(m.heartbeatTick(now: s(34_000)) == .sendHeartbeat) // 19 s of silence from the peer: not yet dead
        #expect(m.heartbeatTick(now: s(35_000)) == .peerDead)      // two intervals
        #expect(m.heartbeatTimedOut() == .closeSocket(sending: [], error: .heartbeatTimeout))
    }

    @Test func noHeartbeatsWhenDisabled() {
        var c = Self.config
        c.heartbeat = 0
        var m = Self.open(tune: ConnectionTune(channelMax: 0, frameMax: 0, heartbeat: 0), configuration: c)
        #expect(m.heartbeatTick(now: Self.t0 + .hours(1)) == .none)
    }

    @Test func blockedHoldsPublishesButNotOtherFrames() {
        var m = Self.open()
        let publish: [AMQPFrame] = [.method(channel: 1, .basicPublish(BasicPublish(exchange: "x", routingKey: "k")))]
        #expect(m.outboundPublish(publish) == .send(publish))
        #expect(m.frameReceived(.method(channel: 0, .connectionBlocked(reason: "low on memory"))) == .blockedChanged(reason: "low on memory"))
        #expect(m.blockedReason == "low on memory")
        #expect(m.outboundPublish(publish) == .none)
        #expect(m.outboundPublish(publish) == .none)
        #expect(m.frameReceived(.method(channel: 0, .connectionUnblocked)) == .send(publish + publish))
        #expect(m.outboundPublish(publish) == .send(publish))
    }

    @Test func serverCloseIsAnsweredAndSurfaced() {
        var m = Self.open()
        let args = CloseArguments(replyCode: 320, replyText: "CONNECTION_FORCED - broker forced connection closure with reason 'test'")
        #expect(m.frameReceived(.method(channel: 0, .connectionClose(args))) ==
            .closeSocket(sending: [.method(channel: 0, .connectionCloseOk)], error: .connectionClosedByServer(args)))
        #expect(m.state == .closed(.connectionClosedByServer(args)))
    }

    @Test func protocolErrorSendsCloseWithReplyCodeThenWaitsForCloseOk() {
        var m = Self.open()
        let action = m.protocolError(.frameTooLarge(size: 1 << 20, max: 131_072))
        guard case .send(let frames) = action, case .method(0, .connectionClose(let args)) = frames.first else {
            Issue.record("expected connection.close"); return
        }
        #expect(args.replyCode == 501)
        #expect(m.frameReceived(.method(channel: 0, .basicAck(deliveryTag: 1, multiple: false))) == .none) // discarded while closing
        #expect(m.frameReceived(.method(channel: 0, .connectionCloseOk)) ==
            .closeSocket(sending: [], error: .protocolViolation(.frameTooLarge(size: 1 << 20, max: 131_072))))
    }

    @Test func unexpectedMethodOnChannelZeroIsCommandInvalid() {
        var m = Self.open()
        guard case .send(let frames) = m.frameReceived(.method(channel: 0, .basicAck(deliveryTag: 1, multiple: false))),
              case .method(0, .connectionClose(let args)) = frames.first else {
            Issue.record("expected connection.close"); return
        }
        #expect(args.replyCode == 503)
    }

    @Test func userCloseIsGraceful() {
        var m = Self.open()
        #expect(m.close() == .send([.method(channel: 0, .connectionClose(CloseArguments(replyCode: 200, replyText: "goodbye")))]))
        #expect(m.close() == .none)
        #expect(m.frameReceived(.method(channel: 0, .connectionCloseOk)) == .closeSocket(sending: [], error: .closedByUser))
        #expect(m.socketClosed() == .closedByUser)
    }

    @Test func socketLossBeforeOpen() {
        var m = ConnectionStateMachine(configuration: Self.config, now: Self.t0)
        _ = m.connected()
        #expect(m.socketClosed() == .connectionLost("socket closed"))
    }

    @Test func frameBeforeOpenIsUnexpected() {
        var m = ConnectionStateMachine(configuration: Self.config, now: Self.t0)
        _ = m.connected()
        _ = m.frameReceived(.method(channel: 0, .connectionStart(ConnectionStart())))
        guard case .send(let frames) = m.channelFrameBeforeOpen(1), case .method(0, .connectionClose(let args)) = frames.first else {
            Issue.record("expected close"); return
        }
        #expect(args.replyCode == 505)
    }
}

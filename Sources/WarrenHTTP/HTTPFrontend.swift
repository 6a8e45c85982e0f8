import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOSSL
import HummingbirdWebSocket
import Logging
import ServiceLifecycle
import NIOCore
import WarrenCore
import Foundation

/// The HTTP side of Warren: health, readiness, the demo page, and WebSocket upgrades at `/v1/ws`.
public enum HTTPFrontend {
    /// Builds the HTTP application serving `configuration.http.listen`, running the broker link beside it.
    /// The application and the drain service to run after it in the same service group.
    public static func application(configuration: BridgeConfiguration, link: BrokerLink, tokens: TokenAuthority?,
                                   sessions: PollSessionCodec, logger: Logger) throws -> (some ApplicationProtocol, DrainService)
    {
        let sockets = OpenSockets()
        let authenticator = Authenticator(configuration: configuration, tokens: tokens)
        let router = Router()
        switch configuration.poll.corsOrigin {
        case "": break
        case "*": router.add(middleware: CORSMiddleware(allowOrigin: .all, allowMethods: [.get, .post, .delete, .head, .options]))
        case let origin: router.add(middleware: CORSMiddleware(allowOrigin: .oneOf(origin), allowMethods: [.get, .post, .delete, .head, .options]))
        }
        let polls = PollRoutes(configuration: configuration, link: link, authenticator: authenticator, codec: sessions)
        polls.register(on: router)
        StoreRoutes(link: link, support: polls.support).register(on: router)
        PresenceRoutes(link: link, support: polls.support).register(on: router)
        router.get("healthz") { _, _ in "ok\n" }
        router.get("metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(bytes: link.metrics.prometheusText())))
        }
        router.get("v1/stats") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "application/json"],
                     body: .init(byteBuffer: ByteBuffer(bytes: link.metrics.statsJSON())))
        }
        router.get("dashboard") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(string: DashboardPage.html)))
        }
        router.get("readyz") { _, _ -> Response in
            link.isReady
                ? Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ready\n")))
                : Response(status: .serviceUnavailable, body: .init(byteBuffer: ByteBuffer(string: "not ready\n")))
        }
        // A plain GET of the WebSocket path is answered here with the reason an upgrade would be
        // refused (a refused upgrade gets the same status and reason: HandshakeRefusal).
        router.get("v1/ws") { request, _ -> Response in
            guard link.runtime != nil, link.isBrokerUp, !link.isDraining else {
                return errorResponse(503, .unavailable, "not accepting connections")
            }
            let identity: ClientIdentity
            do {
                (identity, _) = try await authenticator.authenticate(query: Query(target: request.uri.description),
                                                                        authorization: request.headers[.authorization])
            } catch let error as AuthFailure {
                return errorResponse(error.status, error.code, error.message)
            }
            if let users = link.runtime?.users, users.isAtConnectionLimit(identity.user) {
                return errorResponse(429, .rateLimited, "at most \(users.maxConnections) connections per user")
            }
            return errorResponse(426, .badFrame, "this endpoint speaks WebSocket: send an Upgrade request")
        }
        router.get("/warren.js") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/javascript; charset=utf-8", .cacheControl: "no-cache"],
                     body: .init(byteBuffer: ClientScript.bytes))
        }
        if configuration.demo {
            router.get("/") { _, _ in
                Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                         body: .init(byteBuffer: ByteBuffer(string: DemoPage.html)))
            }
        }

        let address = HostAndPort(configuration.http.listen)!
        let wsConfiguration = WebSocketServerConfiguration(
            maxFrameSize: configuration.limits.maxFrameBytes,
            // A socket that has not answered a ping by the next one is closed, so a silent
            // client goes within two periods: keep that inside idle_timeout.
            autoPing: .enabled(timePeriod: .seconds(min(configuration.websocket.pingInterval,
                                                        max(1, configuration.websocket.idleTimeout / 2)))),
            closeTimeout: .seconds(5),
            validateUTF8: true)
        // A refused upgrade is answered with its status and JSON reason (HandshakeRefusal); a plain
        // GET of /v1/ws with the same credentials gets the same from the router.
        let shouldUpgrade: @Sendable (HTTPRequest, any Channel, Logger) async throws
            -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> = { request, channel, logger in
                // Upgraded or refused, the connection is hummingbird's from here.
                ConnectionTaskGate.need(on: channel)
                // A refusal is answered with its status and reason (DESIGN §4), not an empty 400.
                func refuse(_ status: Int, _ code: ErrorCode, _ message: String) async -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
                    await HandshakeRefusal.send(on: channel, status: status, code: code, message: message)
                    return .dontUpgrade
                }
                guard request.path?.split(separator: "?").first == "/v1/ws" else {
                    return await refuse(404, .notFound, "WebSocket upgrades are served at /v1/ws")
                }
                guard !link.isDraining, link.isBrokerUp, let runtime = link.runtime else {
                    return await refuse(503, .unavailable, "not accepting connections")
                }
                let identity: ClientIdentity
                let expiresAt: Date?
                do {
                    (identity, expiresAt) = try await authenticator.authenticate(
                        query: Query(target: request.path ?? ""), authorization: request.headerFields[.authorization])
                } catch let error as AuthFailure {
                    return await refuse(error.status, error.code, error.message)
                } catch {
                    return await refuse(401, .unauthorized, "\(error)")
                }
                guard runtime.users.openConnection(identity.user) else {
                    runtime.metrics.limitHit(.ws, .connections)
                    return await refuse(429, .rateLimited, "at most \(runtime.users.maxConnections) connections per user")
                }
                return .upgrade([:]) { inbound, outbound, _ in
                    defer { runtime.users.closeConnection(identity.user) }
                    await serve(inbound: inbound, outbound: outbound, channel: channel, identity: identity, rules: identity.rules,
                                expiresAt: expiresAt, runtime: runtime, sockets: sockets, logger: logger)
                }
            }
        // Hostile HTTP: small header limits (larger is a closed connection), keep-alive
        // connections closed after http.idle_timeout, and a first request head that must arrive
        // within http.header_timeout (slowloris).
        // Pollers are served below hummingbird, on the event loop (PollConnectionHandler).
        let door = PollConnectionContext(routes: polls, cors: !configuration.poll.corsOrigin.isEmpty,
                                         idleTimeout: .seconds(Int64(configuration.http.idleTimeout)))
        let http1 = HTTP1Channel.Configuration(
            idleTimeout: .seconds(Int64(configuration.http.idleTimeout)),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: 16 << 10, maxHeaderListSize: 32 << 10, maxHeaderFieldCount: 100))
        let headTimeout = TimeAmount.seconds(Int64(configuration.http.headerTimeout))
        var server = HTTPServerBuilder { responder in
            WarrenConnectionChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, configuration: .init(http1: http1, ws: wsConfiguration),
                                                    shouldUpgrade: shouldUpgrade),
                headTimeout: headTimeout, polls: door)
        }
        // HTTPS / WSS for deployments without a terminating proxy.
        if let certificate = configuration.http.tlsCertificateFile, let key = configuration.http.tlsKeyFile {
            let tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
            server = try .tls(server, tlsConfiguration: tls)
        }
        let app = Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: "warren"),
            services: [link],
            logger: logger
        )
        return (app, DrainService(link: link, sockets: sockets, answerPolls: { polls.answerParkedPolls() }))
    }

    static func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel, identity: ClientIdentity,
                      rules: AccessRules, expiresAt: Date?, runtime: BridgeRuntime, sockets: OpenSockets,
                      logger: Logger) async {
        var logger = logger
        logger[metadataKey: "user"] = "\(identity.user)"
        logger.info("websocket connected", metadata: ["device": "\(identity.device)"])
        runtime.metrics.connectionOpened(.ws)
        defer { runtime.metrics.connectionClosed(.ws) }
        let output = WebSocketOutput(channel: channel, limit: runtime.limits.outboundBufferBytes,
                                     hardCap: runtime.limits.effectiveHardCapBytes,
                                     grace: .seconds(Int64(runtime.limits.slowGraceSeconds)))
        await output.installWireWriter()
        sockets.add(output)
        defer { sockets.remove(output) }
        let session = ClientSession(runtime: runtime, user: identity.user, device: identity.device, rules: rules,
                                    output: output, via: .ws, logger: logger)
        // A token's expiry holds for the life of the socket (close 4401).
        let expiry = expiresAt.map { date in
            Task {
                try await Task.sleep(for: .milliseconds(Int64(max(0, date.timeIntervalSinceNow) * 1000)))
                output.close(code: CloseCode.tokenExpired, reason: "token expired")
            }
        }
        defer { expiry?.cancel() }
        await withGracefulShutdownHandler {
            await pump(inbound: inbound, outbound: outbound, output: output, session: session, runtime: runtime, logger: logger)
        } onGracefulShutdown: {
            output.close(code: CloseCode.goingAway, reason: "server shutting down")
        }
        await session.end()
        logger.info("websocket disconnected")
    }

    static func pump(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, output: WebSocketOutput,
                     session: ClientSession, runtime: BridgeRuntime, logger: Logger) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await output.run(outbound) }
            do {
                // The client's frames are handled on the socket's own event loop: no hop to the
                // concurrency pool and back per frame (EventLoopTaskExecutor).
                try await withTaskExecutorPreference(EventLoopTaskExecutor(output.channel.eventLoop)) {
                    for try await message in inbound.messages(maxSize: runtime.limits.maxFrameBytes) {
                        switch message {
                        case .text(let text):
                            await session.handle(ByteBuffer(string: text))
                        case .binary:
                            session.fail(ProtocolError(.badFrame, "binary frames are not accepted: send JSON text frames", ref: nil))
                        }
                    }
                }
            } catch {
                // swift-websocket closes with 1009 itself; its error type is internal, so the
                // limit is recognised by name to count it.
                if String(describing: error).contains("messageTooLarge") { runtime.metrics.limitHit(.ws, .frameSize) }
                logger.debug("websocket inbound ended", metadata: ["error": "\(error)"])
            }
            output.finish()
            await group.waitForAll()
        }
    }

    static func errorResponse(_ status: Int, _ code: ErrorCode, _ message: String) -> Response {
        RouteSupport.jsonResponse(status, RouteSupport.errorBody(code, message))
    }
}

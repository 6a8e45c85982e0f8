import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOSSL
import Logging
import ServiceLifecycle
import NIOCore
import NIOHTTP1
import NIOPosix
import WarrenCore
import Foundation

/// The HTTP side of Warren: health, readiness, metrics, the demo page, the store and presence
/// routes, and — below hummingbird, on the event loop — polling and WebSockets at `/v1/ws`.
public enum HTTPFrontend {
    /// Builds the HTTP server of `configuration.http.listen` with the broker link beside it (one
    /// service: the server stops before the link), and the drain service to run after it in the
    /// same service group.
    public static func application(configuration: BridgeConfiguration, link: BrokerLink, tokens: TokenAuthority?,
                                   sessions: PollSessionCodec, logger: Logger) throws -> (some Service, DrainService)
    {
        let sockets = OpenSockets()
        let authenticator = Authenticator(configuration: configuration, tokens: tokens, metrics: link.metrics)
        let router = Router()
        let methods: [HTTPRequest.Method] = [.get, .post, .delete, .head, .options]
        switch configuration.poll.corsOrigins {
        case []: break
        case ["*"]: router.add(middleware: CORSMiddleware(allowOrigin: .all, allowMethods: methods))
        case let origins: router.add(middleware: AllowedOriginsMiddleware(origins, allowMethods: methods))
        }
        router.add(middleware: NotFoundMiddleware())
        let polls = PollRoutes(configuration: configuration, link: link, authenticator: authenticator, codec: sessions)
        polls.register(on: router)
        StoreRoutes(link: link, support: polls.support).register(on: router)
        PresenceRoutes(link: link, support: polls.support).register(on: router)
        // The operations endpoints: on their own listener when http.internal_listen is set (a
        // port only the operators' network reaches), the health checks on both.
        let inside: HostAndPort? = configuration.http.internalListen.isEmpty ? nil : HostAndPort(configuration.http.internalListen)
        let operations = inside == nil ? router : Router()
        if inside != nil { operations.add(middleware: NotFoundMiddleware()) }
        health(on: router, link: link)
        if inside != nil { health(on: operations, link: link) }
        readOnly(operations, "metrics") {
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(bytes: link.metrics.prometheusText())))
        }
        readOnly(operations, "v1/stats") {
            Response(status: .ok, headers: [.contentType: "application/json"],
                     body: .init(byteBuffer: ByteBuffer(bytes: link.metrics.statsJSON())))
        }
        readOnly(operations, "dashboard") {
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(string: DashboardPage.html)))
        }
        // A plain GET of the WebSocket path (or a handshake the raw parser did not take) is
        // answered here with the reason an upgrade would be refused (WebSocketDoor refuses
        // handshakes with the same status and reason).
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
                return errorResponse(429, .rateLimited, "at most \(users.maxConnections) connections (WebSockets and poll sessions) per user on this node")
            }
            return errorResponse(426, .badFrame, "this endpoint speaks WebSocket: send an Upgrade request")
        }
        readOnly(router, "/warren.js") {
            Response(status: .ok, headers: [.contentType: "text/javascript; charset=utf-8", .cacheControl: "no-cache"],
                     body: .init(byteBuffer: ClientScript.bytes))
        }
        if configuration.demo {
            readOnly(router, "/") {
                Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                         body: .init(byteBuffer: ByteBuffer(string: DemoPage.html)))
            }
        }

        let address = HostAndPort(configuration.http.listen)!
        let webSockets = WebSocketDoor(configuration: configuration, link: link, authenticator: authenticator, sockets: sockets, logger: logger)
        // Hostile HTTP: small header limits (larger is a closed connection), keep-alive
        // connections closed after http.idle_timeout, and a first request head that must arrive
        // within http.header_timeout (slowloris).
        // Pollers and WebSockets are served below hummingbird, on the event loop
        // (PollConnection on the EpollDoor or a PollConnectionHandler, WebSocketConnectionHandler).
        let door = PollConnectionContext(routes: polls, cors: !configuration.poll.corsOrigins.isEmpty,
                                         idleTimeout: .seconds(Int64(configuration.http.idleTimeout)), webSockets: webSockets)
        let http1 = HTTP1Channel.Configuration(
            idleTimeout: .seconds(Int64(configuration.http.idleTimeout)),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: 16 << 10, maxHeaderListSize: 32 << 10, maxHeaderFieldCount: 100))
        // HTTPS / WSS for deployments without a terminating proxy.
        var tls: NIOSSLContext?
        if let certificate = configuration.http.tlsCertificateFile, let key = configuration.http.tlsKeyFile {
            tls = try NIOSSLContext(configuration: TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))))
        }
        let listener = HTTPListener(host: address.host, port: address.port, tls: tls,
                                    headTimeout: .seconds(Int64(configuration.http.headerTimeout)),
                                    backlog: configuration.http.backlog, polls: door,
                                    http1: HTTP1Channel(responder: respond(with: router.buildResponder(), logger: logger),
                                                        configuration: http1),
                                    group: MultiThreadedEventLoopGroup.singleton, logger: logger)
        var services: [any Service] = [link]
        if let inside {
            // Plain HTTP (an internal network), the same defences; stopped after the public
            // listener, so /metrics and /readyz answer through a drain.
            services.append(HTTPListener(host: inside.host, port: inside.port, tls: nil,
                                         headTimeout: .seconds(Int64(configuration.http.headerTimeout)),
                                         backlog: 256, polls: nil,
                                         http1: HTTP1Channel(responder: respond(with: operations.buildResponder(), logger: logger),
                                                             configuration: http1),
                                         group: MultiThreadedEventLoopGroup.singleton, logger: logger))
        }
        // Without TLS, pollers are served on epoll threads of their own (EpollDoor).
        services.append(tls == nil ? EpollDoor(listener: listener, loops: System.coreCount) : listener as any Service)
        let app = ServiceGroup(configuration: .init(services: services, logger: logger))
        return (app, DrainService(link: link, sockets: sockets, answerPolls: { polls.answerParkedPolls() }))
    }

    /// What hummingbird's `Application` did for each request of a connection it serves: the
    /// router's answer (500 for an error it did not turn into one), with `Date` and `Server`.
    static func respond(with responder: some HTTPResponder<BasicRequestContext>, logger: Logger) -> HTTPChannelHandler.Responder {
        { request, responseWriter, channel in
            let context = BasicRequestContext(source: .init(channel: channel, logger: logger))
            var response: Response
            do {
                response = try await responder.respond(to: request, context: context)
            } catch let error as HTTPParserError {
                throw error
            } catch {
                logger.debug("unrecognised error from a route", metadata: ["error": "\(error)"])
                response = Response(status: .internalServerError)
            }
            response.headers[.date] = HTTPDate.now()
            response.headers[.server] = "warren"
            try await responseWriter.write(response: response.head, body: response.body)
        }
    }

    /// `/healthz` (the process is alive) and `/readyz` (it serves: broker link and topology up,
    /// not draining).
    static func health(on router: Router<BasicRequestContext>, link: BrokerLink) {
        readOnly(router, "healthz") { Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ok\n"))) }
        readOnly(router, "readyz") {
            link.isReady
                ? Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ready\n")))
                : Response(status: .serviceUnavailable, body: .init(byteBuffer: ByteBuffer(string: "not ready\n")))
        }
    }

    /// A read-only endpoint, answered to GET and to HEAD (its head alone): RFC 9110 §9.3.2 asks
    /// every server for HEAD, and load balancers and uptime checks probe with it. Only these:
    /// hummingbird's HEAD for every GET route would answer a HEAD of a poll by taking its
    /// messages and dropping them with the body.
    static func readOnly(_ router: Router<BasicRequestContext>, _ path: RouterPath,
                         _ respond: @escaping @Sendable () -> Response) {
        router.get(path) { _, _ in respond() }
        router.head(path) { _, _ in respond().createHeadResponse() }
    }

    static func errorResponse(_ status: Int, _ code: ErrorCode, _ message: String) -> Response {
        RouteSupport.jsonResponse(status, RouteSupport.errorBody(code, message))
    }
}

import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import WarrenCore

/// The HTTP side of Warren: the public listener (polls, publishes and WebSockets answered by
/// each ``HTTPConnection`` itself; health, readiness, metrics, the pages, the store and
/// presence through hummingbird's router) and, with `http.internal_listen`, the operations
/// listener.
package enum HTTPFrontend {
    /// Builds the HTTP server of `configuration.http.listen` with the broker link beside it (one
    /// service: the server stops before the link), and the drain service to run after it in the
    /// same service group. `door`: what serves the public listener when it has no TLS (the
    /// listener itself, or the epoll door in its place).
    package static func application(configuration: BridgeConfiguration, link: BrokerLink, tokens: TokenAuthority?,
                                    sessions: PollSessionCodec, logger: Logger,
                                    door: (HTTPListener) -> any Service = { $0 }) throws -> (some Service, DrainService)
    {
        let sockets = OpenSockets()
        let authenticator = Authenticator(configuration: configuration, tokens: tokens, metrics: link.metrics)
        let polls = PollRoutes(configuration: configuration, link: link, authenticator: authenticator, codec: sessions)
        let cors = CORSPolicy(configuration.poll.corsOrigins)
        let (router, operations) = routers(configuration: configuration, link: link, polls: polls)
        let inside: HostAndPort? = configuration.http.internalListen.isEmpty ? nil : HostAndPort(configuration.http.internalListen)
        let address = HostAndPort(configuration.http.listen)!
        let webSockets = WebSocketDoor(configuration: configuration, link: link, authenticator: authenticator, sockets: sockets, logger: logger)
        let eventStreams = EventStreamDoor(link: link, authenticator: authenticator, sockets: sockets,
                                           heartbeatSeconds: configuration.http.sseHeartbeat, logger: logger)
        let settings = HTTPConnectionStateMachine.Settings(headTimeout: .seconds(Int64(configuration.http.headTimeout)),
                                                            idleTimeout: .seconds(Int64(configuration.http.idleTimeout)),
                                                            maxBody: configuration.http.maxBody)
        let budget = BodyBudget(limit: configuration.http.maxBodyBytesInFlight)
        // HTTPS / WSS for deployments without a terminating proxy.
        var tls: NIOSSLContext?
        if let certificate = configuration.http.tlsCertificateFile, let key = configuration.http.tlsKeyFile {
            tls = try NIOSSLContext(configuration: TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))))
        }
        let edge = EdgeContext(polls: polls, router: RouterEndpoint(responder: router.buildResponder(), logger: logger), cors: cors,
                               webSockets: webSockets, eventStreams: eventStreams, authenticator: authenticator, settings: settings,
                               budget: budget, metrics: link.metrics)
        let listener = HTTPListener(host: address.host, port: address.port, tls: tls, backlog: configuration.http.backlog, edge: edge,
                                    group: MultiThreadedEventLoopGroup.singleton, logger: logger,
                                    maxPendingOutput: configuration.http.maxPendingOutput)
        var services: [any Service] = [link]
        if let inside, let operations {
            // Plain HTTP (an internal network), the same defences; stopped after the public
            // listener, so /metrics and /readyz answer through a drain.
            let operationsEdge = EdgeContext(polls: nil, router: RouterEndpoint(responder: operations.buildResponder(), logger: logger),
                                             cors: nil, webSockets: nil, authenticator: authenticator, settings: settings, budget: budget,
                                             metrics: link.metrics)
            services.append(HTTPListener(host: inside.host, port: inside.port, tls: nil, backlog: 256, edge: operationsEdge,
                                         group: MultiThreadedEventLoopGroup.singleton, logger: logger,
                                         maxPendingOutput: configuration.http.maxPendingOutput))
        }
        services.append(tls == nil ? door(listener) : listener)
        let app = ServiceGroup(configuration: .init(services: services, logger: logger))
        return (app, DrainService(link: link, sockets: sockets, answerPolls: { polls.answerParkedPolls() }))
    }

    /// The router of the public listener (every endpoint the connection does not answer itself)
    /// and, with `http.internal_listen`, the operations listener's (metrics, stats, dashboard and
    /// health there; nil: all on the public one).
    static func routers(configuration: BridgeConfiguration, link: BrokerLink, polls: PollRoutes)
        -> (public: Router<WarrenRequestContext>, operations: Router<WarrenRequestContext>?)
    {
        let cors = CORSPolicy(configuration.poll.corsOrigins)
        let router = Router(context: WarrenRequestContext.self)
        let methods: [HTTPRequest.Method] = [.get, .post, .delete, .head, .options]
        if let cors {
            if cors.origins == nil {
                router.add(middleware: CORSMiddleware(allowOrigin: .all, allowMethods: methods))
            } else {
                router.add(middleware: AllowedOriginsMiddleware(cors, allowMethods: methods))
            }
        }
        router.add(middleware: NotFoundMiddleware())
        let identified = router.group().add(middleware: IdentityMiddleware(authenticator: polls.authenticator))
            .group(context: IdentifiedRequestContext.self)
        polls.register(on: identified)
        StoreRoutes(link: link, support: polls.support).register(on: identified)
        PresenceRoutes(link: link).register(on: identified)
        // The operations endpoints: on their own listener when http.internal_listen is set (a
        // port only the operators' network reaches), the health checks on both.
        let inside = !configuration.http.internalListen.isEmpty
        let operations = inside ? Router(context: WarrenRequestContext.self) : router
        if inside { operations.add(middleware: NotFoundMiddleware()) }
        health(on: router, link: link)
        if inside { health(on: operations, link: link) }
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
        // A GET of the WebSocket path that is not a handshake is answered with the reason an
        // upgrade would be refused (WebSocketDoor refuses handshakes with the same status and reason).
        identified.get("v1/ws") { _, context -> Response in
            guard link.runtime != nil, link.isBrokerUp, !link.isDraining else {
                return errorResponse(503, .unavailable, "not accepting connections")
            }
            if let users = link.runtime?.users, users.isAtConnectionLimit(context.identity.user) {
                return errorResponse(429, .rateLimited, "at most \(users.maxConnections) connections (WebSockets, event streams and poll sessions) per user on this node")
            }
            var response = errorResponse(426, .badFrame, "this endpoint speaks WebSocket: send an Upgrade request")
            response.headers[.secWebSocketVersion] = "13"
            response.headers[.upgrade] = "websocket"
            return response
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
        return (router, inside ? operations : nil)
    }

    /// `/healthz` (the process is alive) and `/readyz` (it serves: broker link and topology up,
    /// not draining).
    static func health(on router: Router<WarrenRequestContext>, link: BrokerLink) {
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
    static func readOnly(_ router: Router<WarrenRequestContext>, _ path: RouterPath,
                         _ respond: @escaping @Sendable () -> Response) {
        router.get(path) { _, _ in respond() }
        router.head(path) { _, _ in respond().createHeadResponse() }
    }

    static func errorResponse(_ status: Int, _ code: ErrorCode, _ message: String) -> Response {
        RouteSupport.jsonResponse(status, RouteSupport.errorBody(code, message))
    }
}

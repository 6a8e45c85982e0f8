import Hummingbird
import Logging
import WarrenCore

/// The HTTP side of Warren: health and readiness now; WebSocket, polling and metrics build on it.
public enum HTTPFrontend {
    /// Builds the HTTP application serving `configuration.http.listen`, running `services` beside it.
    public static func application(configuration: BridgeConfiguration, link: BrokerLink, logger: Logger)
        -> some ApplicationProtocol
    {
        let router = Router()
        router.get("healthz") { _, _ in "ok\n" }
        router.get("readyz") { _, _ -> Response in
            link.isReady
                ? Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ready\n")))
                : Response(status: .serviceUnavailable, body: .init(byteBuffer: ByteBuffer(string: "not ready\n")))
        }
        let address = HostAndPort(configuration.http.listen)!
        return Application(
            router: router,
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: "warren"),
            services: [link],
            logger: logger
        )
    }
}

import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import WarrenCore
@testable import WarrenHTTP

/// The endpoints Warren serves through hummingbird's router, tested in HummingbirdTesting's
/// router mode (no socket): health, readiness, metrics, the pages, the 404 every unknown path
/// gets, and the identity every user's endpoint needs first. The node has no broker link, so
/// what needs one answers 503.
@Suite("The router's endpoints")
struct RouteTests {
    static func app(_ configure: (inout BridgeConfiguration) -> Void = { _ in }) async -> some ApplicationProtocol {
        var configuration = BridgeConfiguration()
        configure(&configuration)
        let link = BrokerLink(configuration: configuration, logger: Logger(label: "test"))
        let authenticator = Authenticator(configuration: configuration, tokens: nil, metrics: .disabled)
        let polls = PollRoutes(configuration: configuration, link: link, authenticator: authenticator,
                               codec: await PollSessionCodec.make(secret: ""))
        return Application(router: HTTPFrontend.routers(configuration: configuration, link: link, polls: polls).public)
    }

    static func code(_ response: TestResponse) -> String? {
        guard let json = try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any],
              let error = json["error"] as? [String: Any] else { return nil }
        return error["code"] as? String
    }

    @Test func healthAndReadiness() async throws {
        try await Self.app().test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok && String(buffer: response.body) == "ok\n")
            }
            try await client.execute(uri: "/healthz", method: .head) { response in
                #expect(response.status == .ok && response.body.readableBytes == 0)
            }
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable, "no broker link: not ready")
            }
        }
    }

    @Test func metricsStatsAndPages() async throws {
        try await Self.app().test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok && response.headers[.contentType]?.hasPrefix("text/plain") == true)
            }
            try await client.execute(uri: "/v1/stats", method: .get) { response in
                #expect(response.status == .ok && String(buffer: response.body).contains("\"version\":"))
            }
            try await client.execute(uri: "/warren.js", method: .get) { response in
                #expect(response.status == .ok && response.headers[.contentType]?.hasPrefix("text/javascript") == true)
            }
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .ok && String(buffer: response.body).contains("<html"))
            }
            try await client.execute(uri: "/dashboard", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
    }

    /// With `http.internal_listen`, the public router does not serve the operations endpoints.
    @Test func operationsEndpointsMoveToTheInternalListener() async throws {
        try await Self.app { $0.http.internalListen = "127.0.0.1:9090" }.test(.router) { client in
            for path in ["/metrics", "/v1/stats", "/dashboard"] {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .notFound && Self.code(response) == "not_found", "\(path)")
                }
            }
            try await client.execute(uri: "/healthz", method: .get) { response in #expect(response.status == .ok) }
        }
    }

    /// Any path or method no endpoint serves is Warren's JSON 404, a HEAD's without its body.
    @Test func anUnknownPathIsAJSON404() async throws {
        try await Self.app().test(.router) { client in
            try await client.execute(uri: "/nowhere", method: .get) { response in
                #expect(response.status == .notFound && Self.code(response) == "not_found")
            }
            try await client.execute(uri: "/v1/poll/s", method: .head) { response in
                #expect(response.status == .notFound && response.body.readableBytes == 0, "a HEAD of a poll takes nothing")
            }
            try await client.execute(uri: "/v1/history", method: .put) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    /// Every user's endpoint learns who asks from the identity middleware: no user is a 401,
    /// a bad word a 400, and only then does the endpoint itself answer.
    @Test(arguments: [("/v1/history?route=a.b", HTTPRequest.Method.get), ("/v1/conversations", .get), ("/v1/read", .post),
                      ("/v1/presence?route=room.a", .get), ("/v1/poll/s/ack", .post), ("/v1/poll/s", .delete), ("/v1/ws", .get)])
    func everyUsersEndpointNeedsAnIdentity(_ path: String, _ method: HTTPRequest.Method) async throws {
        let joiner = path.contains("?") ? "&" : "?"
        try await Self.app().test(.router) { client in
            try await client.execute(uri: path, method: method) { response in
                #expect(response.status == .unauthorized && Self.code(response) == "unauthorized", "\(path)")
            }
            try await client.execute(uri: path + joiner + "user=b%20d", method: method) { response in
                #expect(response.status == .badRequest && Self.code(response) == "bad_frame", "\(path)")
            }
            try await client.execute(uri: path + joiner + "user=alice&device=x.y", method: method) { response in
                #expect(response.status == .badRequest, "\(path)")
            }
        }
    }

    /// With an identity, the endpoints answer themselves: here, without a broker link, that
    /// they are unavailable (or what their request lacks).
    @Test func identifiedRequestsReachTheirEndpoint() async throws {
        try await Self.app().test(.router) { client in
            try await client.execute(uri: "/v1/history?user=alice&route=alice.bob", method: .get) { response in
                #expect(response.status == .serviceUnavailable && Self.code(response) == "unavailable")
            }
            try await client.execute(uri: "/v1/history?user=alice", method: .get) { response in
                #expect(response.status == .badRequest && Self.code(response) == "bad_frame", "route is required")
            }
            try await client.execute(uri: "/v1/poll/s?user=alice", method: .delete) { response in
                #expect(response.status == .serviceUnavailable)
            }
            try await client.execute(uri: "/v1/poll/s/ack?user=alice", method: .post, body: ByteBuffer(string: "{}")) { response in
                #expect(response.status == .badRequest && Self.code(response) == "bad_frame", "cursor must be a string")
            }
            try await client.execute(uri: "/v1/ws?user=alice", method: .get) { response in
                #expect(response.status == .serviceUnavailable, "the broker link is down")
            }
        }
    }

    /// CORS: a listed origin's preflight is answered with its origin; another gets no
    /// allowance, and a `Vary: Origin` so no cache hands it on.
    @Test func corsAllowsTheListedOriginsOnly() async throws {
        try await Self.app { $0.poll.corsOrigins = ["https://a.example"] }.test(.router) { client in
            let preflight: HTTPFields = [.origin: "https://a.example", .accessControlRequestMethod: "POST"]
            try await client.execute(uri: "/v1/messages", method: .options, headers: preflight) { response in
                #expect(response.headers[.accessControlAllowOrigin] == "https://a.example")
            }
            try await client.execute(uri: "/healthz", method: .get, headers: [.origin: "https://b.example"]) { response in
                #expect(response.status == .ok && response.headers[.accessControlAllowOrigin] == nil)
                #expect(response.headers[.vary] == "Origin")
            }
        }
    }
}

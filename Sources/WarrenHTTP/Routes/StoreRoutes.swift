import Hummingbird
import WarrenCore

/// The conversation store over HTTP (docs/protocol.md): `GET /v1/history`, `GET /v1/conversations`,
/// `POST /v1/read`. The same operations and checks as the WebSocket ops, for poll sessions and
/// any HTTP client.
struct StoreRoutes: Sendable {
    let link: BrokerLink
    let support: RouteSupport

    func register(on router: RouterGroup<IdentifiedRequestContext>) {
        router.get("v1/history") { request, context in
            await RouteSupport.respond {
                let identity = context.identity
                let query = Query(target: request.uri.description)
                guard let route = query.items["route"] else { throw ProtocolError(.badFrame, "route is required", ref: nil) }
                var limit: Int?
                if let raw = query.items["limit"] {
                    guard let n = Query.integer(raw) else { throw ProtocolError(.badFrame, "limit must be an integer", ref: nil) }
                    limit = n
                }
                let page = try await runtime().store(for: identity.user, via: .poll).history(route: route, before: query.items["before"], limit: limit,
                                                               rules: identity.rules)
                return RouteSupport.jsonResponse(200, StoreAnswer.historyBody(route: route, page: page))
            }
        }
        router.get("v1/conversations") { _, context in
            await RouteSupport.respond {
                let identity = context.identity
                let list = try await runtime().store(for: identity.user, via: .poll).list(user: identity.user, rules: identity.rules)
                return RouteSupport.jsonResponse(200, StoreAnswer.conversationsBody(list))
            }
        }
        router.post("v1/read") { request, context in
            await RouteSupport.respond {
                let identity = context.identity
                let json = try await support.jsonBody(request)
                guard let route = json["route"]?.stringValue, let id = json["id"]?.stringValue else {
                    throw ProtocolError(.badFrame, "the body needs route and id strings", ref: nil)
                }
                _ = try await runtime().markRead(user: identity.user, rules: identity.rules, route: route, id: id, via: .poll)
                return Response(status: .noContent)
            }
        }
    }

    private func runtime() throws(ProtocolError) -> BridgeRuntime {
        guard let runtime = link.runtime else { throw ProtocolError(.unavailable, "the broker link is not ready", ref: nil) }
        return runtime
    }
}

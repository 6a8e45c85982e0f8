import Hummingbird
import WarrenCore

/// `GET /v1/presence?route=…` (docs/protocol.md): who is present on a route, on every node.
struct PresenceRoutes: Sendable {
    let link: BrokerLink

    func register(on router: RouterGroup<IdentifiedRequestContext>) {
        router.get("v1/presence") { request, context in
            await RouteSupport.respond {
                let identity = context.identity
                let query = Query(target: request.uri.description)
                guard let route = query.items["route"] else { throw ProtocolError(.badFrame, "route is required", ref: nil) }
                guard let runtime = link.runtime else { throw ProtocolError(.unavailable, "the broker link is not ready", ref: nil) }
                let users = try runtime.presentUsers(route: route, rules: identity.rules)
                return RouteSupport.jsonResponse(200, ServerFrame.presenceBody(route: route, users: users))
            }
        }
    }
}

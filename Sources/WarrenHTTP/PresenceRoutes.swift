import Hummingbird
import WarrenCore

/// `GET /v1/presence?route=…` (DESIGN §11): who is present on a route, on every node.
struct PresenceRoutes: Sendable {
    let link: BrokerLink
    let support: RouteSupport

    func register(on router: Router<BasicRequestContext>) {
        router.get("v1/presence") { request, _ in
            await RouteSupport.respond {
                let (identity, query, _) = try await support.authenticate(request)
                guard let route = query.items["route"] else { throw ProtocolError(.badFrame, "route is required", ref: nil) }
                guard let runtime = link.runtime else { throw ProtocolError(.unavailable, "the broker link is not ready", ref: nil) }
                let users = try runtime.presentUsers(route: route, rules: identity.rules)
                return RouteSupport.jsonResponse(200, ServerFrame.presenceBody(route: route, users: users))
            }
        }
    }
}

import Hummingbird
import WarrenCore

/// Authenticates a request as the WebSocket and the poll path do (docs/protocol.md: a bearer token
/// or `?token=`, `?user=` in none mode, `?device=`) and puts the identity in its context; a
/// request that fails is answered here with the status and JSON error of docs/protocol.md (401 a bad
/// or missing token, 400 a bad `user` or `device` word). The one place the router's endpoints
/// learn who is asking.
struct IdentityMiddleware: RouterMiddleware {
    typealias Context = WarrenRequestContext

    let authenticator: Authenticator

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        do {
            (context.identity, _) = try await authenticator.authenticate(query: Query(target: request.uri.description),
                                                                         authorization: request.headers[.authorization])
        } catch {
            return RouteSupport.jsonResponse(error.status, RouteSupport.errorBody(error.code, error.message))
        }
        return try await next(request, context)
    }
}

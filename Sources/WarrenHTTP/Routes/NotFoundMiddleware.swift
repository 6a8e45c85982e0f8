import Hummingbird
import WarrenCore

/// A request no route takes (an unknown path, or a method its path does not serve) is answered
/// `404 {"error":{"code":"not_found",…}}` like every other error of the HTTP doors (docs/protocol.md),
/// not with hummingbird's empty 404; a refused WebSocket handshake to an unknown path already was.
struct NotFoundMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let response = HTTPFrontend.errorResponse(404, .notFound, "no endpoint \(request.method) \(request.uri.path)")
            return request.method == .head ? response.createHeadResponse() : response
        }
    }
}

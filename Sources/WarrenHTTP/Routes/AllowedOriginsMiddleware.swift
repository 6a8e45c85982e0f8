import Hummingbird

/// CORS for the pages of the origins `http.cors_origin` lists: hummingbird's middleware, which
/// echoes the request's `Origin`, for a listed one; nothing for any other (the browser then
/// keeps the answer from the page). hummingbird's own `oneOf` takes its origins as variadic
/// arguments only, so not a list read from the configuration.
struct AllowedOriginsMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: CORSPolicy
    let cors: CORSMiddleware<Context>

    init(_ policy: CORSPolicy, allowMethods: [HTTPRequest.Method]) {
        self.policy = policy
        cors = CORSMiddleware(allowOrigin: .originBased, allowMethods: allowMethods)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin] else { return try await next(request, context) }
        guard policy.allows(origin) else {
            // The answer depends on the Origin either way (`Vary`, as hummingbird's middleware
            // sets for a listed one): a cache must not hand this one to a listed origin's page.
            var response = try await next(request, context)
            response.headers[values: .vary].append("Origin")
            return response
        }
        return try await cors.handle(request, context: context, next: next)
    }
}

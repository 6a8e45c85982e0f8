import Hummingbird
import Logging

/// The request context of Warren's router: hummingbird's core values, and who asked, set by
/// ``IdentityMiddleware`` on the endpoints that need one (``IdentifiedRequestContext``).
struct WarrenRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    var identity: ClientIdentity?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}

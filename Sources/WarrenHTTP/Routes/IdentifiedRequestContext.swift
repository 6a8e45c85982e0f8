import Hummingbird

/// The context of the endpoints that act for a user (the store, presence, a poll session's
/// ack and delete): made from a ``WarrenRequestContext`` whose identity ``IdentityMiddleware``
/// has set, so a handler reads it without checking for it.
struct IdentifiedRequestContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let identity: ClientIdentity

    init(context: WarrenRequestContext) throws {
        // Only reached behind IdentityMiddleware, which answers a request without an identity itself.
        guard let identity = context.identity else { throw HTTPError(.unauthorized) }
        coreContext = context.coreContext
        self.identity = identity
    }
}

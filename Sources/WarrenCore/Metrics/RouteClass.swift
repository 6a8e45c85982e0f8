/// A routing key's route class (a `[[route]]` name or `other`), as ``WarrenMetrics`` indexes it.
public struct RouteClass: Sendable, Hashable {
    let index: Int
}

/// The `direction` label of docs/operations.md.
public enum Direction: Int, CaseIterable, Sendable {
    case `in`, out
    public var label: String { rawValue == 0 ? "in" : "out" }
}

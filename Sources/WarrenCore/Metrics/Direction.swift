/// The `direction` label of DESIGN §7.
public enum Direction: Int, CaseIterable, Sendable {
    case `in`, out
    public var label: String { rawValue == 0 ? "in" : "out" }
}

/// Why a benchmark client could not be set up.
public enum BenchError: Error, CustomStringConvertible {
    case refused(String)
    case closed(String)
    case broker(String)
    case warren(String)

    public var description: String {
        switch self {
        case .refused(let s): "refused: \(s)"
        case .closed(let s): "closed: \(s)"
        case .broker(let s): "broker: \(s)"
        case .warren(let s): "warren: \(s)"
        }
    }
}

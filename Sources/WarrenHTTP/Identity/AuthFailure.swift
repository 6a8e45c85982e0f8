import WarrenCore

/// Authentication failures, answered with HTTP status before any upgrade.
struct AuthFailure: Error, Sendable {
    var status: Int
    var code: ErrorCode
    var message: String
}

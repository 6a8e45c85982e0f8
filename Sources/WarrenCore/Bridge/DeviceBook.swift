import NIOConcurrencyHelpers
import NIOCore

/// The inbox devices each user has used on this node lately, bounded
/// (`limits.max_devices_per_user`).
///
/// Every device word names a durable queue on the broker (`warren.inbox.<user>.<device>`),
/// kept for `inbox.expires_ms` after its last use (7 days by default). Without a bound, one
/// authenticated user could make the broker keep any number of queues (quorum queues on a
/// cluster: a Raft group each) just by choosing new device words. A device counts from a
/// subscription that opens its inbox on this node until `window` after the last one; past the
/// limit, an inbox subscription with another device is refused (`rate_limited`). Per node, as
/// every per-user limit: N nodes allow N times as much, and a restarted node starts afresh.
///
/// One small lock per inbox opened; the delivery path never touches it. A user whose devices
/// have all gone quiet for `window` is forgotten (swept when the table grows past 100,000 users).
public final class DeviceBook: Sendable {
    /// 0 = unlimited.
    public let maxDevices: Int
    /// How long a device counts after its last inbox subscription, in nanoseconds.
    let window: UInt64
    private let users = NIOLockedValueBox<[String: [String: UInt64]]>([:])

    public init(maxDevices: Int, windowMilliseconds: Int) {
        self.maxDevices = maxDevices
        self.window = UInt64(max(windowMilliseconds, 0)) * 1_000_000
    }

    /// Counts `device` as in use by `user` now, or refuses it (false) when the user already has
    /// `maxDevices` others in use.
    public func admit(user: String, device: String, now: UInt64 = NIODeadline.now().uptimeNanoseconds) -> Bool {
        guard maxDevices > 0 else { return true }
        return users.withLockedValue { users in
            if users.count > 100_000 { sweep(&users, now: now) }
            var devices = (users[user] ?? [:]).filter { !isExpired($0.value, now: now) }
            guard devices[device] != nil || devices.count < maxDevices else {
                users[user] = devices
                return false
            }
            devices[device] = now
            users[user] = devices
            return true
        }
    }

    /// Users currently tracked (for tests).
    public var trackedUsers: Int { users.withLockedValue { $0.count } }

    private func isExpired(_ lastUse: UInt64, now: UInt64) -> Bool {
        now >= lastUse && now - lastUse > window
    }

    private func sweep(_ users: inout [String: [String: UInt64]], now: UInt64) {
        users = users.filter { $0.value.values.contains { !isExpired($0, now: now) } }
    }
}

import NIOConcurrencyHelpers
import NIOCore

/// Per-user limits on one node: open connections (WebSockets and the poll sessions open on the node), a
/// publish rate shared by all of a user's connections and `POST /v1/messages`, and a rate of
/// conversation-store requests (each a database query) shared by both doors.
///
/// One small lock per connection open/close and per publish; the delivery path never
/// touches it. Users with no open connection and a full bucket are forgotten, so the table
/// is bounded by active users.
public final class UserLimiter: Sendable {
    struct UserState {
        var connections = 0
        var bucket: TokenBucket?
        var queries: TokenBucket?

        func isIdle(now: UInt64) -> Bool {
            connections == 0 && (bucket?.isFull(now: now) ?? true) && (queries?.isFull(now: now) ?? true)
        }
    }

    /// 0 = unlimited.
    public let maxConnections: Int
    /// Publishes per second per user; 0 = unlimited.
    public let publishRate: Int
    public let publishBurst: Int
    /// Store requests per second per user; 0 = unlimited.
    public let queryRate: Int
    public let queryBurst: Int
    private let users = NIOLockedValueBox<[String: UserState]>([:])

    public init(maxConnections: Int, publishRate: Int, publishBurst: Int, queryRate: Int = 0, queryBurst: Int = 1) {
        self.maxConnections = maxConnections
        self.publishRate = publishRate
        self.publishBurst = max(publishBurst, 1)
        self.queryRate = queryRate
        self.queryBurst = max(queryBurst, 1)
    }

    public convenience init(_ limits: BridgeLimits) {
        self.init(maxConnections: limits.maxConnectionsPerUser, publishRate: limits.publishRate, publishBurst: limits.publishBurst,
                  queryRate: limits.queryRate, queryBurst: limits.queryBurst)
    }

    /// Counts a new connection for `user`, or refuses it (false) at the limit.
    public func openConnection(_ user: String) -> Bool {
        users.withLockedValue { users in
            var state = users[user] ?? UserState()
            guard maxConnections == 0 || state.connections < maxConnections else { return false }
            state.connections += 1
            users[user] = state
            return true
        }
    }

    public func closeConnection(_ user: String, now: UInt64 = NIODeadline.now().uptimeNanoseconds) {
        users.withLockedValue { users in
            guard var state = users[user] else { return }
            state.connections = max(0, state.connections - 1)
            if state.isIdle(now: now) {
                users[user] = nil
            } else {
                users[user] = state
            }
        }
    }

    /// Takes `count` publishes from `user`'s bucket, or refuses all of them (false).
    public func takePublishes(_ user: String, count: Int, now: UInt64 = NIODeadline.now().uptimeNanoseconds) -> Bool {
        take(count, from: \.bucket, rate: publishRate, burst: publishBurst, user: user, now: now)
    }

    /// Takes one store request from `user`'s bucket, or refuses it (false).
    public func takeQuery(_ user: String, now: UInt64 = NIODeadline.now().uptimeNanoseconds) -> Bool {
        take(1, from: \.queries, rate: queryRate, burst: queryBurst, user: user, now: now)
    }

    private func take(_ count: Int, from bucket: WritableKeyPath<UserState, TokenBucket?>, rate: Int, burst: Int, user: String,
                      now: UInt64) -> Bool {
        guard rate > 0 else { return true }
        return users.withLockedValue { users in
            if users.count > 100_000 { Self.sweep(&users, now: now) }
            var state = users[user] ?? UserState()
            var tokens = state[keyPath: bucket] ?? TokenBucket(rate: Double(rate), burst: Double(burst), now: now)
            let taken = tokens.take(count, now: now)
            state[keyPath: bucket] = tokens
            users[user] = state
            return taken
        }
    }

    /// Whether `user` has as many connections open as allowed.
    public func isAtConnectionLimit(_ user: String) -> Bool {
        maxConnections > 0 && users.withLockedValue { ($0[user]?.connections ?? 0) >= maxConnections }
    }

    /// Users currently tracked (for tests).
    public var trackedUsers: Int { users.withLockedValue { $0.count } }

    private static func sweep(_ users: inout [String: UserState], now: UInt64) {
        users = users.filter { !$0.value.isIdle(now: now) }
    }
}

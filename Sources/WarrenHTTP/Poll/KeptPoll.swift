import Foundation
import WarrenCore

/// The last poll an ``HTTPConnection`` took, kept with what its parse found, for the next
/// poll that repeats it but for its `ack` (``RepeatedPoll``, which the connection's state
/// machine matches). A class: the connection reads it on every poll, and a copy of its fields
/// (strings, arrays, the identity) was a retain and a release each.
final class KeptPoll {
    let head: RawRequestHead
    /// The session string, within `head`'s target.
    let session: Substring
    let identity: ClientIdentity
    /// When the identity's token expires (token mode), in ms since 1970 (``WallClock``): the
    /// clock read for the poll is compared with it (a `Date` would read the clock again).
    let expiresAt: Int64?
    let wait: Int
    let max: Int
    /// The CORS header lines its answers carry.
    let cors: String?

    init(head: RawRequestHead, session: Substring, identity: ClientIdentity, expiresAt: Date?, wait: Int, max: Int, cors: String?) {
        self.head = head
        self.cors = cors
        self.session = session
        self.identity = identity
        self.expiresAt = expiresAt.map { Int64(($0.timeIntervalSince1970 * 1000).rounded(.down)) }
        self.wait = wait
        self.max = max
    }
}

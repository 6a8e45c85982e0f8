import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import WarrenCore

/// Channels for a test: one administration channel and one consumption channel per prefetch.
final class FakeChannels: ChannelSource {
    let admin = FakeChannel("admin")
    private let consumers = NIOLockedValueBox<[Int: FakeChannel]>([:])

    func administration() async throws -> any BrokerChannel { admin }
    func consumption(prefetch: Int, near loop: (any EventLoop)?) async throws -> any BrokerChannel { consuming(prefetch: prefetch) }

    /// The consumption channel for `prefetch`; a new one once the broker closed it, as the pool does.
    func consuming(prefetch: Int) -> FakeChannel {
        consumers.withLockedValue { c in
            if let existing = c[prefetch], existing.closeReason == nil { return existing }
            let channel = FakeChannel(c[prefetch] == nil ? "consume\(prefetch)" : "consume\(prefetch)-again")
            c[prefetch] = channel
            return channel
        }
    }
}

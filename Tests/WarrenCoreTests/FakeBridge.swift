import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import WarrenCore

/// A bridge runtime on fake channels.
struct FakeBridge {
    let channels = FakeChannels()
    let live = FakeChannel("live")
    let binds = FakeChannel("binds")
    let publish = FakeChannel("publish")
    let runtime: BridgeRuntime

    init(limits: BridgeLimits = BridgeLimits(), inbox: InboxSettings = InboxSettings(), liveBindAllAfter: Int = 0,
         presence: Presence? = nil, metrics: WarrenMetrics = .disabled, conversations: Conversations? = nil) async throws {
        let logger = Logger(label: "test")
        let hub = LiveHub(channel: live, bindChannel: binds, queue: "warren.live.test", exchange: "chat",
                          bindAllAfter: liveBindAllAfter, metrics: .disabled, logger: logger)
        try await hub.start()
        var limits = limits
        limits.publishRate = 0
        runtime = BridgeRuntime(channels: channels, publisher: Publisher(channel: publish, exchange: "chat", metrics: .disabled,
                                                                         logger: logger),
                                hub: hub, exchange: "chat", limits: limits, inbox: inbox, policy: .standard, metrics: metrics,
                                conversations: conversations, presence: presence, logger: logger)
    }

    /// The live queue's consumer tag.
    var liveConsumer: String { live.consumerTags[0] }
}

import Logging
import Testing
@testable import WarrenCore

@Suite("The live hub's bindings")
struct LiveHubTests {
    final class Owner: Sendable {}

    /// Patterns are bound on several channels at once, and each pattern's bind and unbind
    /// stay on one channel, in order.
    @Test func eachPatternStaysOnOneOfSeveralBindChannels() async throws {
        let channels = (0..<4).map { FakeChannel("binds\($0)") }
        let hub = LiveHub(channel: FakeChannel("live"), bindChannels: channels, queue: "warren.live.test", exchange: "chat",
                          metrics: .disabled, logger: Logger(label: "test"))
        let owner = Owner()
        let patterns = try (0..<40).map { try TopicPattern("idle.user\($0)") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for pattern in patterns {
                group.addTask {
                    let subscriber = LiveSubscriber(session: ObjectIdentifier(owner), subscriptionID: "s")
                    try await hub.subscribe(pattern, subscriber: subscriber)
                    await hub.unsubscribe(pattern, subscriber: subscriber)
                    try await hub.subscribe(pattern, subscriber: subscriber)
                }
            }
            try await group.waitForAll()
        }
        #expect(hub.patternCount == patterns.count)
        #expect(channels.filter { !$0.calls.isEmpty }.count > 1, "the bindings were spread over the channels")
        for pattern in patterns {
            let holders = channels.filter { $0.calls.contains("bind warren.live.test \(pattern.value)") }
            #expect(holders.count == 1, "\(pattern.value) on one channel")
            let calls = holders.first?.calls.filter { $0.hasSuffix(" \(pattern.value)") }
            #expect(calls == ["bind warren.live.test \(pattern.value)", "unbind warren.live.test \(pattern.value)",
                              "bind warren.live.test \(pattern.value)"])
        }
    }
}

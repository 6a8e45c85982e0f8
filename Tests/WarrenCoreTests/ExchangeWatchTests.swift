import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import WarrenCore

private func frame(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

/// The exchange deleted on the broker: the watch finds it gone, declares it again, and the
/// node binds again what it knows.
@Suite("Exchange watch")
struct ExchangeWatchTests {
    /// Channels the watch opens, each a fake; `missing` makes the broker answer the next
    /// passive declare with 404 (which closes that channel), `down` makes opening fail.
    final class Broker: Sendable {
        let opened = NIOLockedValueBox<[FakeChannel]>([])
        let missing = NIOLockedValueBox(false)
        let down = NIOLockedValueBox(false)
        func open() throws -> any BrokerChannel {
            if down.withLockedValue({ $0 }) { throw AMQPError.notConnected }
            let channel = FakeChannel("watch\(opened.withLockedValue { $0.count })")
            if missing.withLockedValue({ m in defer { m = false }; return m }) { channel.closeAtNext(404) }
            opened.withLockedValue { $0.append(channel) }
            return channel
        }
    }

    @Test func aMissingExchangeIsDeclaredAgainAndTheBindingsRestored() async throws {
        let broker = Broker()
        let watch = ExchangeWatch(exchange: "chat", open: { try broker.open() }, logger: Logger(label: "test"))
        let restores = NIOLockedValueBox(0)
        let restore: @Sendable () async -> String = { restores.withLockedValue { $0 += 1 }; return "" }
        // Present: one passive declare, nothing else.
        #expect(await watch.check(restore: restore) == false)
        #expect(broker.opened.withLockedValue { $0.map(\.calls) } == [["declare exchange chat", "close"]])
        // The link is down: the check cannot tell and does nothing.
        broker.down.withLockedValue { $0 = true }
        #expect(await watch.check(restore: restore) == false)
        broker.down.withLockedValue { $0 = false }
        // Gone: the 404 closes the check's channel; the exchange is declared on another, then restored.
        broker.missing.withLockedValue { $0 = true }
        #expect(await watch.check(restore: restore) == true)
        let channels = broker.opened.withLockedValue { $0 }
        #expect(channels.count == 3 && channels[1].closeReason != nil && channels[2].calls == ["declare exchange chat", "close"])
        #expect(restores.withLockedValue { $0 } == 1)
        #expect(await watch.check(restore: restore) == false)
        #expect(restores.withLockedValue { $0 } == 1)
    }

    /// What the node binds again: its live queue's keys and the patterns of its open inboxes —
    /// not what was unsubscribed, nor the inbox of a session that ended.
    @Test func theNodeBindsAgainWhatItsSessionsHold() async throws {
        let bridge = try await FakeBridge()
        let rules = AccessPolicy.standard.resolved(for: "alice")
        let alice = ClientSession(runtime: bridge.runtime, user: "alice", device: "d", rules: rules, output: RecordingOutput(),
                                  logger: Logger(label: "test"))
        let bob = ClientSession(runtime: bridge.runtime, user: "bob", device: "d", rules: AccessPolicy.standard.resolved(for: "bob"),
                                output: RecordingOutput(), logger: Logger(label: "test"))
        await alice.handle(frame(##"{"op":"sub","id":"in","pattern":"#.alice.#","mode":"inbox"}"##))
        await alice.handle(frame(##"{"op":"sub","id":"rooms","pattern":"room.#","mode":"inbox"}"##))
        await alice.handle(frame(##"{"op":"sub","id":"r","pattern":"room.lobby"}"##))
        await alice.handle(frame(##"{"op":"sub","id":"x","pattern":"room.x"}"##))
        await bob.handle(frame(##"{"op":"sub","id":"in","pattern":"#.bob.#","mode":"inbox"}"##))
        await alice.handle(frame(##"{"op":"unsub","id":"rooms"}"##))
        await alice.handle(frame(##"{"op":"unsub","id":"x"}"##))
        await bob.end()
        let (admin, binds) = (bridge.channels.admin.calls.count, bridge.binds.calls.count)
        #expect(await bridge.runtime.restoreBindings() == "live queue 1, store 0, 1 inboxes 1")
        #expect(Array(bridge.channels.admin.calls.dropFirst(admin)) == ["bind warren.inbox.alice.d #.alice.#"])
        #expect(Array(bridge.binds.calls.dropFirst(binds)) == ["bind warren.live.test room.lobby"])
        await alice.end()
    }

    /// A publish the broker refused with 404 (no exchange) has the watch check at once, not at
    /// its next tick.
    @Test func aPublishRefusedWith404ChecksAtOnce() async throws {
        let broker = Broker()
        let watch = ExchangeWatch(exchange: "chat", interval: .seconds(3600), open: { try broker.open() }, logger: Logger(label: "test"))
        let (restored, restoring) = AsyncStream.makeStream(of: Void.self)
        watch.start { restoring.yield(); return "" }
        defer { watch.stop() }
        broker.missing.withLockedValue { $0 = true }
        watch.channelClosed(.channelClosed(CloseArguments(replyCode: 404, replyText: "NOT_FOUND - no exchange 'chat'")))
        var iterator = restored.makeAsyncIterator()
        #expect(await iterator.next() != nil)
        #expect(broker.opened.withLockedValue { $0.map(\.calls) } == [["declare exchange chat"], ["declare exchange chat", "close"]])
    }
}


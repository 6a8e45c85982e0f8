import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import WarrenCore

/// A handler kept in a lock-protected box (the publisher's send listeners, presence's handlers)
/// is called as directly after thousands of uses of the box as after one.
///
/// A closure stored straight in a generic box (`NIOLockedValueBox<(… -> …)?>`, or a tuple with
/// one) is kept at the generic layout: every `withLockedValue` hands it out through a
/// conversion wrapper and stores it back wrapped once more. Each use of the box added a layer,
/// and a call went through all of them: on 2026-12-02 a bench run found WebSocket publishing at
/// 247 messages a second, 5–8 ms of Warren's CPU per publish, nearly all of it in those
/// wrappers (``Publisher``'s send listeners, wrapped again by every send with a cid). Each
/// layer is a stack frame in a debug build, so the depth at which the handler runs, measured
/// from its caller, shows them.
@Suite("Handlers kept in a lock are called directly however often the lock is taken")
struct HandlerIndirectionTests {
    /// The address of a local variable of the caller's callee: where the stack is now.
    @inline(never)
    static func stackAddress() -> UInt {
        var marker = 0
        return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
    }

    /// How far below `outer` the stack was where the handler ran.
    static func depth(from outer: UInt, to inner: NIOLockedValueBox<UInt>) -> Int {
        Int(bitPattern: outer &- inner.withLockedValue { $0 })
    }

    @Test func aSendListenerAfterThousandsOfSends() throws {
        let publisher = Publisher(channel: FakeChannel("publish"), exchange: "chat", metrics: .disabled, logger: Logger(label: "test"))
        let inner = NIOLockedValueBox<UInt>(0)
        publisher.onSends(attempting: { _, _, _, _ in
            inner.withLockedValue { $0 = Self.stackAddress() }
            return nil
        }, confirmed: { _, _, _ in })
        func send(_ cid: String) throws -> Int {
            let request = PublishRequest(routes: [try RouteKey("alice.bob")], multicast: false, type: "text", body: .string("hi"),
                                         cid: cid, transient: false, headers: [])
            let outer = Self.stackAddress()
            _ = try publisher.submit(request, from: "alice", via: .ws, maxMessageBytes: 65536)
            return Self.depth(from: outer, to: inner)
        }
        let first = try send("c0")
        for i in 1..<2000 { _ = try send("c\(i)") }
        let last = try send("c2000")
        #expect(first > 0)
        #expect(last - first < 4096, "the listener ran \(last - first) bytes deeper after 2,000 sends than after one")
    }

    @Test func presenceHandlersAfterThousandsOfMessages() throws {
        let logger = Logger(label: "test")
        let publisher = Publisher(channel: FakeChannel("publish"), exchange: "chat", metrics: .disabled, logger: logger)
        let presence = Presence(node: "n1", settings: PresenceSettings(), exchange: "chat.presence", channel: FakeChannel("presence"),
                                publisher: publisher, metrics: .disabled, logger: logger)
        let deleted = NIOLockedValueBox<UInt>(0), acked = NIOLockedValueBox<UInt>(0)
        presence.onSessionDeletedElsewhere { _ in deleted.withLockedValue { $0 = Self.stackAddress() } }
        presence.onAckForwarded { _, _, _ in acked.withLockedValue { $0 = Self.stackAddress() } }
        func hear(_ announcement: PresenceAnnouncement, _ inner: NIOLockedValueBox<UInt>) -> Int {
            let message = AMQPMessage(body: ByteBuffer(bytes: announcement.encoded()), properties: BasicProperties(contentType: "application/json"),
                                      exchange: "chat.presence", routingKey: "", redelivered: false,
                                      deliveryTag: DeliveryTag(epoch: 1, value: 1), consumerTag: "p")
            let outer = Self.stackAddress()
            presence.deliver(message)
            return Self.depth(from: outer, to: inner)
        }
        let deletion = PresenceAnnouncement.sessionDeleted(node: "n2", session: "s")
        let ack = PresenceAnnouncement.ackForwarded(node: "n2", session: "s", cursor: "n1.1", polledAt: nil)
        let first = (hear(deletion, deleted), hear(ack, acked))
        for _ in 0..<2000 {
            _ = hear(deletion, deleted)
            _ = hear(ack, acked)
        }
        let last = (hear(deletion, deleted), hear(ack, acked))
        #expect(first.0 > 0 && first.1 > 0)
        #expect(last.0 - first.0 < 4096, "the deletion handler ran \(last.0 - first.0) bytes deeper after 2,000 messages")
        #expect(last.1 - first.1 < 4096, "the forwarded-ack handler ran \(last.1 - first.1) bytes deeper after 2,000 messages")
    }
}

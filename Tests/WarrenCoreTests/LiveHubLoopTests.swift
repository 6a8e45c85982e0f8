import Logging
import NIOCore
import NIOPosix
import Testing
@testable import WarrenCore

/// The live fan-out hands a receiver with a loop of its own (a poll session) its deliveries
/// on that loop, one hand-off per message and loop, in the order the broker sent them; the
/// others get theirs on the broker's thread before the delivery returns.
@Suite("The live fan-out, per event loop")
struct LiveHubLoopTests {
    @Test func receiversWithALoopGetEveryMessageThereInOrder() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let (hub, live) = try await Self.startedHub()
        let pattern = try TopicPattern("room.x")
        let inline = CollectingLiveReceiver()
        let loops = [group.next(), group.next()]
        // Two on one loop (one hand-off carries both), one on the other, under two subscription ids.
        let looped = [LoopedLiveReceiver(loop: loops[0]), LoopedLiveReceiver(loop: loops[1]), LoopedLiveReceiver(loop: loops[0])]
        let receivers: [(any LiveReceiver, String)] = [(looped[0], "a"), (inline, "a"), (looped[1], "b"), (looped[2], "a")]
        for (receiver, id) in receivers {
            try await hub.subscribe(pattern, subscriber: LiveSubscriber(session: ObjectIdentifier(receiver), subscriptionID: id,
                                                                        receiver: receiver))
        }
        let consumer = live.consumerTags[0]
        let count = 200
        for n in 0..<count { live.deliver(to: consumer, routingKey: "room.x", body: "seq-\(n)-") }
        // On the broker's thread: all there as soon as the deliveries returned.
        #expect(inline.bodies.count == count)
        // The last message's hand-offs ran after every earlier one (each loop runs its tasks in order).
        for loop in loops { try await loop.submit {}.get() }
        for (receiver, id) in [(looped[0], "a"), (looped[1], "b"), (looped[2], "a")] {
            #expect(receiver.allOnLoop)
            let ns = receiver.bodies.map { body in Self.number(in: body) }
            #expect(ns == Array(0..<count), "in the broker's order")
            #expect(receiver.bodies.allSatisfy { $0.contains("\"sub\":\"\(id)\"") })
        }
        // The same frame bytes as the inline receiver's (a copy per loop, not another encoding).
        #expect(looped[0].bodies == inline.bodies && looped[2].bodies == inline.bodies)
        try await group.shutdownGracefully()
    }

    /// A loop whose last subscriber left is handed nothing more; the other loop's and the
    /// broker thread's receivers go on getting every message.
    @Test func aLoopWhoseSubscribersLeftGetsNothingMore() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let (hub, live) = try await Self.startedHub()
        let pattern = try TopicPattern("room.x")
        let loops = [group.next(), group.next()]
        let staying = LoopedLiveReceiver(loop: loops[0]), leaving = LoopedLiveReceiver(loop: loops[1])
        let inline = CollectingLiveReceiver()
        var subscribers: [LiveSubscriber] = []
        for receiver in [staying, leaving, inline] as [any LiveReceiver] {
            let subscriber = LiveSubscriber(session: ObjectIdentifier(receiver), subscriptionID: "s", receiver: receiver)
            subscribers.append(subscriber)
            try await hub.subscribe(pattern, subscriber: subscriber)
        }
        let consumer = live.consumerTags[0]
        live.deliver(to: consumer, routingKey: "room.x", body: "seq-0-")
        await hub.unsubscribe(pattern, subscriber: subscribers[1])
        live.deliver(to: consumer, routingKey: "room.x", body: "seq-1-")
        for loop in loops { try await loop.submit {}.get() }
        #expect(staying.bodies.map { Self.number(in: $0) } == [0, 1])
        #expect(inline.bodies.map { Self.number(in: $0) } == [0, 1])
        #expect(leaving.bodies.map { Self.number(in: $0) } == [0])
        #expect(staying.allOnLoop && leaving.allOnLoop)
        try await group.shutdownGracefully()
    }

    /// Loops that can be handed tasks without a wake each (the epoll door's) are all handed
    /// their share of a message first and then woken with one call; a message for one loop's
    /// subscriber wakes that loop alone.
    @Test func loopsOfOneGroupAreHandedTheirSharesThenWokenWithOneCall() async throws {
        let nio = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let wakeGroup = BatchWakeTestLoop.Group()
        let loops = [BatchWakeTestLoop(nio.next(), name: "a", group: wakeGroup), BatchWakeTestLoop(nio.next(), name: "b", group: wakeGroup)]
        let (hub, live) = try await Self.startedHub()
        let room = try TopicPattern("room.x"), own = try TopicPattern("user.a")
        let onA = LoopedLiveReceiver(loop: loops[0]), onB = LoopedLiveReceiver(loop: loops[1])
        for (receiver, pattern) in [(onA, room), (onB, room), (onA, own)] {
            try await hub.subscribe(pattern, subscriber: LiveSubscriber(session: ObjectIdentifier(receiver), subscriptionID: "s",
                                                                        receiver: receiver))
        }
        let consumer = live.consumerTags[0]
        live.deliver(to: consumer, routingKey: "room.x", body: "seq-0-")
        #expect(wakeGroup.log.withLockedValue { $0 } == ["wake all"])
        live.deliver(to: consumer, routingKey: "user.a", body: "seq-1-")
        #expect(wakeGroup.log.withLockedValue { $0 } == ["wake all", "wake a"])
        for loop in loops { try await loop.submit {}.get() }
        #expect(onA.bodies.map { Self.number(in: $0) } == [0, 1])
        #expect(onB.bodies.map { Self.number(in: $0) } == [0])
        #expect(onA.allOnLoop && onB.allOnLoop)
        try await nio.shutdownGracefully()
    }

    /// A started hub whose live channel is a fake the test delivers through.
    static func startedHub() async throws -> (LiveHub, FakeChannel) {
        let live = FakeChannel("live"), binds = FakeChannel("binds")
        let hub = LiveHub(channel: live, bindChannel: binds, queue: "warren.live.t", exchange: "chat",
                          metrics: WarrenMetrics(classifier: RouteClassifier([])), logger: Logger(label: "test"))
        try await hub.start()
        return (hub, live)
    }

    /// The number in a frame's `seq-…-` body.
    static func number(in frame: String) -> Int? {
        guard let r = frame.range(of: "seq-") else { return nil }
        return Int(frame[r.upperBound...].prefix { $0.isNumber })
    }
}

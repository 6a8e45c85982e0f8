import NIOCore
import NIOPosix
import Testing
@testable import WarrenCore

/// The live fan-out hands a message to a loop only while a subscriber lives there: the loops
/// are counted by subscription as they are added and removed, whatever the order, and a
/// subscription added twice or removed when absent does not move the count.
@Suite("The live routes' event loops")
struct LiveRoutesTests {
    @Test func aLoopIsListedWhileASubscriptionLivesThere() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let a = group.next(), b = group.next()
        let room = try TopicPattern("room.x"), dm = try TopicPattern("dm.#")
        let onA = [LoopedLiveReceiver(loop: a), LoopedLiveReceiver(loop: a)]
        let onB = LoopedLiveReceiver(loop: b)
        let inline = CollectingLiveReceiver()
        func subscriber(_ receiver: any LiveReceiver, _ id: String) -> LiveSubscriber {
            LiveSubscriber(session: ObjectIdentifier(receiver), subscriptionID: id, receiver: receiver)
        }
        var routes = LiveRoutes()
        func listed() -> [ObjectIdentifier] { routes.loops.map { ObjectIdentifier($0) } }

        let r1 = routes.insert(room, subscriber(onA[0], "s1"))
        #expect(r1)
        let r2 = routes.insert(room, subscriber(inline, "s1"))
        #expect(!r2)
        #expect(listed() == [ObjectIdentifier(a)], "a receiver without a loop of its own lists none")
        let r3 = routes.insert(room, subscriber(onA[0], "s1"))
        #expect(!r3, "the same subscription again")
        _ = routes.insert(dm, subscriber(onA[1], "s2"))
        _ = routes.insert(room, subscriber(onB, "s1"))
        #expect(listed() == [ObjectIdentifier(a), ObjectIdentifier(b)])

        // A subscription that is not there (another id, another pattern) takes nothing away.
        let r4 = routes.remove(room, subscriber(onA[0], "other"))
        #expect(!r4)
        let r5 = routes.remove(dm, subscriber(onA[0], "s1"))
        #expect(!r5)
        _ = routes.remove(room, subscriber(onA[0], "s1"))
        let r6 = routes.remove(room, subscriber(onA[0], "s1"))
        #expect(!r6, "removed twice")
        #expect(listed() == [ObjectIdentifier(a), ObjectIdentifier(b)], "a's other subscription is still there")
        let r7 = routes.remove(dm, subscriber(onA[1], "s2"))
        #expect(r7, "dm.# had one subscriber")
        #expect(listed() == [ObjectIdentifier(b)])
        _ = routes.remove(room, subscriber(onB, "s1"))
        #expect(listed().isEmpty)
        let r8 = routes.remove(room, subscriber(inline, "s1"))
        #expect(r8, "room.x's last")
        #expect(routes.trie.patternCount == 0)
        try await group.shutdownGracefully()
    }
}

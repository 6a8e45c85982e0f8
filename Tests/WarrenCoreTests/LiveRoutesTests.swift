import NIOCore
import NIOPosix
import Testing
@testable import WarrenCore

/// The live fan-out hands a message only to the loops whose subscribers it matched: each
/// pattern's loops are counted by subscription as they are added and removed, whatever the
/// order, and a subscription added twice or removed when absent does not move the count.
@Suite("The live routes' event loops")
struct LiveRoutesTests {
    @Test func aMessageGoesToTheLoopsOfThePatternsItMatched() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let a = group.next(), b = group.next()
        let (ida, idb) = (ObjectIdentifier(a), ObjectIdentifier(b))
        let room = try TopicPattern("room.x"), dm = try TopicPattern("dm.#"), sockets = try TopicPattern("ws.only")
        let onA = [LoopedLiveReceiver(loop: a), LoopedLiveReceiver(loop: a)]
        let onB = LoopedLiveReceiver(loop: b)
        let inline = CollectingLiveReceiver()
        func subscriber(_ receiver: any LiveReceiver, _ id: String) -> LiveSubscriber {
            LiveSubscriber(session: ObjectIdentifier(receiver), subscriptionID: id, receiver: receiver)
        }
        var routes = LiveRoutes()
        func handedTo(_ key: String) throws -> [ObjectIdentifier] { routes.match(try RouteKey(key)).loops.map { ObjectIdentifier($0) } }

        let first = routes.insert(room, subscriber(onA[0], "s1"))
        #expect(first)
        let second = routes.insert(room, subscriber(inline, "s1"))
        #expect(!second)
        #expect(routes.loops(of: room) == [ida], "a receiver without a loop of its own adds none")
        let again = routes.insert(room, subscriber(onA[0], "s1"))
        #expect(!again, "the same subscription again")
        _ = routes.insert(dm, subscriber(onA[1], "s2"))
        _ = routes.insert(room, subscriber(onB, "s1"))
        _ = routes.insert(sockets, subscriber(inline, "s3"))
        #expect(routes.loops(of: room) == [ida, idb])
        #expect(try handedTo("room.x") == [ida, idb])
        #expect(try handedTo("dm.q") == [ida], "only the loop of dm.#'s subscriber")
        #expect(try handedTo("ws.only").isEmpty, "sockets only: no hand-off")
        // Whether a receiver without a loop matched (walked on the broker's thread only then).
        let roomKey = try RouteKey("room.x"), socketsKey = try RouteKey("ws.only")
        #expect(routes.match(roomKey).loose && routes.match(socketsKey).loose)
        #expect(!routes.match(try RouteKey("dm.q")).loose, "pollers only")
        #expect(routes.match(try RouteKey("ws.only")).sets.count == 1)
        #expect(routes.match(try RouteKey("nobody.here")).sets.isEmpty)

        // A subscription that is not there (another id, another pattern) takes nothing away.
        let otherID = routes.remove(room, subscriber(onA[0], "other"))
        #expect(!otherID)
        let otherPattern = routes.remove(dm, subscriber(onA[0], "s1"))
        #expect(!otherPattern)
        #expect(routes.loops(of: room) == [ida, idb] && routes.loops(of: dm) == [ida])
        _ = routes.remove(room, subscriber(onA[0], "s1"))
        let twice = routes.remove(room, subscriber(onA[0], "s1"))
        #expect(!twice, "removed twice")
        #expect(routes.loops(of: room) == [idb])
        #expect(try handedTo("room.x") == [idb])
        #expect(routes.loops(of: dm) == [ida], "a's subscription to dm.# is still there")
        let dmLast = routes.remove(dm, subscriber(onA[1], "s2"))
        #expect(dmLast, "dm.# had one subscriber")
        #expect(routes.loops(of: dm).isEmpty)
        // Removed as sessions remove theirs, by session and id without the receiver: the loop
        // it was added with goes.
        _ = routes.remove(room, LiveSubscriber(session: ObjectIdentifier(onB), subscriptionID: "s1"))
        #expect(try handedTo("room.x").isEmpty)
        #expect(routes.match(roomKey).loose, "the receiver without a loop is still there")
        let roomLast = routes.remove(room, subscriber(inline, "s1"))
        #expect(roomLast, "room.x's last")
        #expect(!routes.match(roomKey).loose)
        _ = routes.insert(room, subscriber(onB, "s1"))
        #expect(!routes.match(roomKey).loose, "a poller back, and still no receiver without a loop")
        _ = routes.remove(room, LiveSubscriber(session: ObjectIdentifier(onB), subscriptionID: "s1"))
        _ = routes.remove(sockets, subscriber(inline, "s3"))
        #expect(routes.trie.patternCount == 0)
        try await group.shutdownGracefully()
    }
}

import Testing
@testable import WarrenCore

@Suite("Presence book")
struct PresenceBookTests {
    let lobby = PresenceEntry(route: "room.lobby", user: "alice")

    @Test func joinsAndLeavesOnceAcrossSubscriptionsAndNodes() {
        var a = PresenceBook(node: "a")
        #expect(a.localJoined(lobby) == .init(announce: true, publish: .join(lobby)))
        #expect(a.localJoined(lobby) == .init(announce: false, publish: nil), "a second subscription on the node: nothing")
        #expect(a.localLeft(lobby) == .init(announce: false, publish: nil))
        // Node b has her too: her last subscription on a leaving is no leave.
        a.received(lobby, present: true, from: "b", at: 1_000)
        #expect(a.localLeft(lobby) == .init(announce: true, publish: nil))
        #expect(a.users(route: "room.lobby") == ["alice"], "still present on b")
        // A join on a while b has her is no join either.
        #expect(a.localJoined(lobby) == .init(announce: true, publish: nil))
        a.received(lobby, present: false, from: "b", at: 2_000)
        #expect(a.localLeft(lobby) == .init(announce: true, publish: .leave(lobby)))
        #expect(a.users(route: "room.lobby").isEmpty)
        #expect(a.localLeft(lobby) == .init(announce: false, publish: nil), "a leave without a join is ignored")
    }

    @Test func aQuietNodeIsForgottenAndTheSmallestLiveNodePublishesItsLeaves() {
        let bob = PresenceEntry(route: "room.lobby", user: "bob")
        // b holds alice and bob; c holds bob too; b then goes quiet (killed).
        var a = PresenceBook(node: "a"), c = PresenceBook(node: "c")
        a.received(state: [lobby, bob], from: "b", at: 1_000)
        a.received(state: [bob], from: "c", at: 25_000)
        c.received(state: [lobby, bob], from: "b", at: 1_000)
        c.received(state: [], from: "a", at: 25_000)
        _ = c.localJoined(bob)
        #expect(a.expire(now: 20_000, timeout: 30_000).isEmpty, "heard from within the timeout")
        #expect(a.expire(now: 31_001, timeout: 30_000) == [.leave(lobby)], "bob is still on c: only alice leaves")
        #expect(c.expire(now: 31_001, timeout: 30_000).isEmpty, "c is not the smallest live node: a publishes")
        #expect(a.users(route: "room.lobby") == ["bob"])
        #expect(a.remote["c"] != nil, "c itself was heard from recently")
    }

    /// b vanishes; a, the smallest live node, was to publish alice's leave, and is killed before
    /// it could: c, not hearing from a again, publishes it with a's own leaves. Had a been heard
    /// from after the grace, it would have published them, and c does not repeat them.
    @Test func theLeavesOfAVanishedNodeAreNotLostWithTheNodeThatOwedThem() {
        let bob = PresenceEntry(route: "room.lobby", user: "bob")
        var c = PresenceBook(node: "c")
        c.received(state: [lobby], from: "b", at: 1_000)
        c.received(state: [bob], from: "a", at: 25_000)
        #expect(c.expire(now: 31_001, timeout: 30_000).isEmpty, "a is alive and the smallest: a's to publish")
        #expect(c.owedByOthers[lobby]?.by == "a")
        // a is never heard from again: c publishes alice's leave with bob's.
        #expect(c.expire(now: 55_001, timeout: 30_000) == [.leave(lobby), .leave(bob)])
        #expect(c.owedByOthers.isEmpty)

        // The same, but a is heard from after the grace: it published alice's leave itself.
        var d = PresenceBook(node: "d")
        d.received(state: [lobby], from: "b", at: 1_000)
        d.received(state: [bob], from: "a", at: 25_000)
        #expect(d.expire(now: 31_001, timeout: 30_000).isEmpty)
        d.received(state: [bob], from: "a", at: 31_001 + PresenceBook.takeoverGrace)
        #expect(d.owedByOthers.isEmpty)
        #expect(d.expire(now: 70_000, timeout: 30_000) == [.leave(bob)], "only a's own leave")

        // Alice back on a node meanwhile: nothing is owed for her.
        var e = PresenceBook(node: "e")
        e.received(state: [lobby], from: "b", at: 1_000)
        e.received(state: [], from: "a", at: 25_000)
        #expect(e.expire(now: 31_001, timeout: 30_000).isEmpty)
        _ = e.localJoined(lobby)
        #expect(e.expire(now: 55_001, timeout: 30_000).isEmpty)
    }

    @Test func aUserLeavingTwoNodesAtOnceLeavesOnceFromTheSmallestNode() {
        // alice on a and on b; c watches. Her last entries on a and b end before either
        // node hears of the other's: each believes the other still holds her.
        var a = PresenceBook(node: "a"), b = PresenceBook(node: "b"), c = PresenceBook(node: "c")
        _ = a.localJoined(lobby)
        _ = b.localJoined(lobby)
        a.received(lobby, present: true, from: "b", at: 1)
        b.received(lobby, present: true, from: "a", at: 1)
        c.received(state: [lobby], from: "a", at: 1)
        c.received(state: [lobby], from: "b", at: 1)
        let leftA = a.localLeft(lobby), leftB = b.localLeft(lobby)
        #expect(leftA == .init(announce: true, publish: nil))
        #expect(leftB == .init(announce: true, publish: nil))
        // Their announcements say they published nothing; c hears a's first, then b's.
        #expect(c.received(lobby, present: false, published: false, from: "a", at: 2) == nil, "b still holds her, as c knows it")
        #expect(c.received(lobby, present: false, published: false, from: "b", at: 2) == nil, "c is not the smallest node")
        #expect(b.received(lobby, present: false, published: false, from: "a", at: 2) == nil, "b is not the smallest node")
        #expect(a.received(lobby, present: false, published: false, from: "b", at: 2) == .leave(lobby), "a owes the leave")
        #expect(a.users(route: "room.lobby").isEmpty && b.users(route: "room.lobby").isEmpty && c.users(route: "room.lobby").isEmpty)

        // One after the other, as usual: the last node publishes, and nobody owes anything.
        _ = a.localJoined(lobby)
        _ = b.localJoined(lobby)
        a.received(lobby, present: true, from: "b", at: 3)
        b.received(lobby, present: true, from: "a", at: 3)
        #expect(a.localLeft(lobby) == .init(announce: true, publish: nil))
        #expect(b.received(lobby, present: false, published: false, from: "a", at: 4) == nil, "b holds her itself")
        #expect(b.localLeft(lobby) == .init(announce: true, publish: .leave(lobby)))
        #expect(a.received(lobby, present: false, published: true, from: "b", at: 4) == nil, "b published it")
    }

    /// The leave two nodes left unpublished at once is the smallest node's to publish; the
    /// others keep it owed by that node, so it is not lost if that node is killed before it
    /// could (and is dropped once that node is heard from after the grace).
    @Test func aLeaveTwoNodesLeftUnpublishedIsNotLostWithTheNodeThatOwedIt() {
        // alice on a and b, both ending at once; c watches. a is killed as it announces.
        var b = PresenceBook(node: "b"), c = PresenceBook(node: "c")
        _ = b.localJoined(lobby)
        b.received(state: [lobby], from: "a", at: 1)
        c.received(state: [lobby], from: "a", at: 1)
        c.received(state: [lobby], from: "b", at: 1)
        #expect(b.localLeft(lobby) == .init(announce: true, publish: nil), "b believes a still holds her")
        #expect(c.received(lobby, present: false, published: false, from: "b", at: 2) == nil)
        #expect(c.received(lobby, present: false, published: false, from: "a", at: 2) == nil, "a's to publish")
        #expect(c.owedByOthers[lobby]?.by == "a")
        #expect(b.received(lobby, present: false, published: false, from: "a", at: 2) == nil, "a's to publish")
        #expect(b.owedByOthers[lobby]?.by == "a")
        // a is never heard from again: b, the smallest left, publishes the leave; c gives it to b.
        #expect(b.expire(now: 30_003, timeout: 30_000) == [.leave(lobby)])
        c.received(state: [], from: "b", at: 30_000)
        #expect(c.expire(now: 30_003, timeout: 30_000).isEmpty)
        #expect(c.owedByOthers[lobby]?.by == "b")
        // b is heard from after the grace: it published it, c owes nothing.
        c.received(state: [], from: "b", at: 30_003 + PresenceBook.takeoverGrace)
        #expect(c.owedByOthers.isEmpty)

        // The same, but a lives on: heard from after the grace, nobody else owes the leave.
        var d = PresenceBook(node: "d")
        d.received(state: [lobby], from: "a", at: 1)
        d.received(state: [lobby], from: "b", at: 1)
        _ = d.received(lobby, present: false, published: false, from: "b", at: 2)
        _ = d.received(lobby, present: false, published: false, from: "a", at: 2)
        d.received(state: [], from: "a", at: 2 + PresenceBook.takeoverGrace)
        #expect(d.owedByOthers.isEmpty)
    }

    @Test func aUserArrivingOnOneNodeAsSheLeavesAnotherJoinsAgain() {
        // alice on a; she arrives on b before b hears that she left a.
        var a = PresenceBook(node: "a"), b = PresenceBook(node: "b"), c = PresenceBook(node: "c")
        _ = a.localJoined(lobby)
        b.received(lobby, present: true, from: "a", at: 1)
        c.received(lobby, present: true, from: "a", at: 1)
        #expect(b.localJoined(lobby) == .init(announce: true, publish: nil), "b believes she is on a")
        #expect(a.localLeft(lobby, at: 2) == .init(announce: true, publish: .leave(lobby)), "a believes she is nowhere else")
        #expect(c.received(lobby, present: false, published: true, from: "a", at: 3) == nil)
        #expect(c.received(lobby, present: true, published: false, from: "b", at: 3) == nil, "c published no leave")
        #expect(b.received(lobby, present: false, published: true, from: "a", at: 3) == nil)
        #expect(a.received(lobby, present: true, published: false, from: "b", at: 3) == .join(lobby), "a's leave crossed b's join")
        #expect(a.received(lobby, present: true, published: false, from: "b", at: 4) == nil, "once")

        // A published join clears it; so does time.
        _ = a.localJoined(lobby)
        _ = a.localLeft(lobby, at: 10)
        #expect(a.received(lobby, present: true, published: true, from: "c", at: 11) == nil)
        #expect(a.received(lobby, present: true, published: false, from: "b", at: 11) == nil, "c's join answered the leave")
        _ = a.received(lobby, present: false, published: true, from: "b", at: 12)
        _ = a.received(lobby, present: false, published: true, from: "c", at: 12)
        _ = a.localJoined(lobby)
        _ = a.localLeft(lobby, at: 20)
        #expect(a.expire(now: 20 + 30_001, timeout: 30_000).isEmpty)
        #expect(a.received(lobby, present: true, published: false, from: "b", at: 30_022) == nil, "the leave is long past")
    }

    @Test func statesReplaceAndGoodbyesForget() {
        var a = PresenceBook(node: "a")
        a.received(state: [lobby], from: "b", at: 1)
        a.received(state: [PresenceEntry(route: "room.x", user: "carol")], from: "b", at: 2)
        #expect(a.users(route: "room.lobby").isEmpty)
        #expect(a.users(route: "room.x") == ["carol"])
        a.received(state: [lobby], from: "a", at: 3)
        #expect(a.users(route: "room.lobby").isEmpty, "its own announcements coming back change nothing")
        a.receivedGoodbye(from: "b")
        #expect(a.users(route: "room.x").isEmpty)
    }
}

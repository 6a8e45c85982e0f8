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

@Suite("Presence announcements")
struct PresenceAnnouncementTests {
    @Test func roundTripAndValidation() {
        let entries: Set<PresenceEntry> = [PresenceEntry(route: "room.lobby", user: "alice"), PresenceEntry(route: "alice.bob", user: "bob")]
        for message in [PresenceAnnouncement.state(node: "n1", entries: entries), .state(node: "n1", entries: []),
                        .change(node: "n2", entry: PresenceEntry(route: "room.x", user: "carol"), present: true),
                        .change(node: "n2", entry: PresenceEntry(route: "room.x", user: "carol"), present: false), .goodbye(node: "n3")] {
            #expect(PresenceAnnouncement.decode(message.encoded()) == message)
        }
        for bad in [#"{"node":"n","kind":"join","route":"room.#","user":"a"}"#, #"{"node":"n","kind":"join","route":"room.x","user":"a.b"}"#,
                    #"{"node":"n x","kind":"bye"}"#, #"{"node":"n","kind":"state","entries":[["room.x"]]}"#,
                    #"{"node":"n","kind":"what"}"#, "not json", #"{"kind":"bye"}"#] {
            #expect(PresenceAnnouncement.decode(Array(bad.utf8)) == nil, "\(bad)")
        }
    }
}

import Testing
@testable import WarrenCore

@Suite("Presence announcements")
struct PresenceAnnouncementTests {
    @Test func roundTripAndValidation() {
        let entries: Set<PresenceEntry> = [PresenceEntry(route: "room.lobby", user: "alice"), PresenceEntry(route: "alice.bob", user: "bob")]
        for message in [PresenceAnnouncement.state(node: "n1", entries: entries), .state(node: "n1", entries: []),
                        .state(node: "n1", entries: [], starting: true),
                        .change(node: "n2", entry: PresenceEntry(route: "room.x", user: "carol"), present: true),
                        .change(node: "n2", entry: PresenceEntry(route: "room.x", user: "carol"), present: false),
                        .change(node: "n2", entry: PresenceEntry(route: "room.x", user: "carol"), present: false, published: false),
                        .goodbye(node: "n3"), .sessionDeleted(node: "n4", session: "0123456789abcdef0123456789abcdef"),
                        .ackForwarded(node: "n5", session: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln", cursor: "n1.42"),
                        .ackForwarded(node: "n5", session: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln", cursor: "n1.0",
                                      polledAt: 1_764_000_000_000),
                        .sent(node: "n6", from: "alice", cid: "c-1 ü", ids: ["01a2277e-80e5-72d1-b3aa-1c336456e15f",
                                                                           "01a2277e-80eb-765a-a0fe-6bdd80c6361b"]),
                        .sending(node: "n7", from: "alice", cid: "c-2", routes: ["alice.bob", "room.x"],
                                 ids: ["01a2277e-80e5-72d1-b3aa-1c336456e15f", "01a2277e-80eb-765a-a0fe-6bdd80c6361b"]),
                        .sends(node: "n8", entries: [
                            RecentSend(from: "alice", cid: "c-1", earlier: .confirmed(["01a2277e-80e5-72d1-b3aa-1c336456e15f"])),
                            RecentSend(from: "bob", cid: "c-2 ü", earlier: .attempted(["room.x": "01a2277e-80eb-765a-a0fe-6bdd80c6361b",
                                                                                        "alice.bob": "01a2277e-80e5-72d1-b3aa-1c336456e15f"])),
                        ])] {
            #expect(PresenceAnnouncement.decode(message.encoded()) == message)
        }
        for bad in [#"{"node":"n","kind":"join","route":"room.#","user":"a"}"#, #"{"node":"n","kind":"join","route":"room.x","user":"a.b"}"#,
                    #"{"node":"n x","kind":"bye"}"#, #"{"node":"n","kind":"state","entries":[["room.x"]]}"#,
                    #"{"node":"n","kind":"what"}"#, "not json", #"{"kind":"bye"}"#,
                    #"{"node":"n","kind":"leave","route":"room.x","user":"a","published":"no"}"#,
                    #"{"node":"n","kind":"deleted"}"#, #"{"node":"n","kind":"deleted","session":"a.b"}"#,
                    #"{"node":"n","kind":"deleted","session":7}"#,
                    #"{"node":"n","kind":"ack","session":"a.b","cursor":"n1"}"#, #"{"node":"n","kind":"ack","session":"a b","cursor":"n1.1"}"#,
                    #"{"node":"n","kind":"ack","cursor":"n1.1"}"#, #"{"node":"n","kind":"ack","session":"a.b","cursor":"n 1.1"}"#,
                    #"{"node":"n","kind":"ack","session":"a.b","cursor":"n1.1","polled_at":"soon"}"#,
                    #"{"node":"n","kind":"sent","from":"a","cid":"c","ids":[]}"#,
                    #"{"node":"n","kind":"sent","from":"a","cid":"c","ids":["01A2277E-80E5-72D1-B3AA-1C336456E15F"]}"#,
                    #"{"node":"n","kind":"sent","from":"a","cid":"","ids":["01a2277e-80e5-72d1-b3aa-1c336456e15f"]}"#,
                    #"{"node":"n","kind":"sent","cid":"c","ids":["01a2277e-80e5-72d1-b3aa-1c336456e15f"]}"#,
                    #"{"node":"n","kind":"sent","from":"a","cid":"c","ids":"01a2277e-80e5-72d1-b3aa-1c336456e15f"}"#,
                    #"{"node":"n","kind":"state","starting":1,"entries":[]}"#,
                    #"{"node":"n","kind":"sending","from":"a","cid":"c","ids":["01a2277e-80e5-72d1-b3aa-1c336456e15f"]}"#,
                    #"{"node":"n","kind":"sending","from":"a","cid":"c","routes":[],"ids":["01a2277e-80e5-72d1-b3aa-1c336456e15f"]}"#,
                    #"{"node":"n","kind":"sending","from":"a","cid":"c","routes":["a.#"],"ids":["01a2277e-80e5-72d1-b3aa-1c336456e15f"]}"#,
                    #"{"node":"n","kind":"sending","from":"a","cid":"c","routes":[7],"ids":["01a2277e-80e5-72d1-b3aa-1c336456e15f"]}"#,
                    #"{"node":"n","kind":"sends","entries":[]}"#, #"{"node":"n","kind":"sends"}"#,
                    #"{"node":"n","kind":"sends","entries":[{"from":"a","cid":"c","ids":["x"]}]}"#,
                    #"{"node":"n","kind":"sends","entries":[{"from":"a","cid":"c","routes":["a.#"],"ids":["01a2277e-80e5-72d1-b3aa-1c336456e15f"]}]}"#,
                    #"{"node":"n","kind":"sends","entries":[{"from":"a","cid":"c","routes":["a.b","a.c"],"ids":["01a2277e-80e5-72d1-b3aa-1c336456e15f"]}]}"#,
                    #"{"node":"n","kind":"sends","entries":[{"from":"a","cid":"c","ids":["01a2277e-80e5-72d1-b3aa-1c336456e15f"]},7]}"#,
                    #"{"node":"n","kind":"sends","entries":[\#(Array(repeating: #"{"from":"a","cid":"c","ids":["01a2277e-80e5-72d1-b3aa-1c336456e15f"]}"#, count: PresenceAnnouncement.maxRecentSends + 1).joined(separator: ","))]}"#] {
            #expect(PresenceAnnouncement.decode(Array(bad.utf8)) == nil, "\(bad)")
        }
    }

    @Test func aCursorNamesTheNodeThatMadeIt() {
        #expect(PollService.node(of: "node-a.17") == "node-a")
        #expect(PollService.node(of: "a.b.17") == nil, "a node id is one word")
        for bad in ["", "node-a", "node-a.", ".17", "node-a.1x", "node a.1", "n.123456789012345678901"] {
            #expect(PollService.node(of: bad) == nil, "\(bad)")
        }
    }
}

import Testing
@testable import WarrenCore

@Suite("Presence outbox")
struct PresenceOutboxTests {
    let join = PresenceAnnouncement.change(node: "a", entry: PresenceEntry(route: "room.lobby", user: "alice"), present: true)
    let leave = PresenceAnnouncement.change(node: "a", entry: PresenceEntry(route: "room.lobby", user: "alice"), present: false)
    let state = PresenceAnnouncement.state(node: "a", entries: [])

    @Test func eachWaitsForItsEnvelopeAndForEveryOneBeforeIt() {
        var outbox = PresenceOutbox()
        #expect(outbox.add(state, gated: false) == (nil, [state]) , "nothing to wait for: at once")
        let (first, none) = outbox.add(join, gated: true)
        #expect(first != nil && none.isEmpty, "its envelope is not confirmed yet")
        let (second, behind) = outbox.add(leave, gated: true)
        #expect(second != nil && second != first && behind.isEmpty)
        #expect(outbox.add(state, gated: false).send.isEmpty, "behind the two")
        #expect(outbox.confirmed(second!).isEmpty, "the second's envelope confirmed first: it still waits for the first")
        #expect(outbox.confirmed(first!) == [join, leave, state], "then all three, in order")
        #expect(outbox.count == 0)
        #expect(outbox.add(join, gated: false).send == [join])
    }

    @Test func goodbyeGoesAtOnceAndIsTheLastWord() {
        var outbox = PresenceOutbox()
        let gate = outbox.add(leave, gated: true).gate!
        #expect(outbox.close(goodbye: .goodbye(node: "a")) == [.goodbye(node: "a")])
        #expect(outbox.confirmed(gate).isEmpty, "what waited is dropped")
        #expect(outbox.add(state, gated: false).send.isEmpty)
        #expect(outbox.close(goodbye: .goodbye(node: "a")).isEmpty, "once")
    }
}

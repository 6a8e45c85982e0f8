import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import WarrenCore

private func item(_ n: Int, inbox: Bool = false) -> PollItem {
    PollItem(frame: ByteBuffer(bytes: ServerFrame.message(sub: "s", envelope: Array("\(n)".utf8), redelivered: false)),
             inboxID: inbox ? "i\(n)" : nil)
}

private func numbers(_ items: [PollItem]) -> [Int] {
    items.compactMap { i -> Int? in
        var tail = ByteBuffer(string: "{")
        i.writeAnswerTail(to: &tail)
        return (try? JSONParser.parse(Array(tail.readableBytesView)))?["env"]?.intValue.map(Int.init)
    }
}

@Suite("Poll buffer")
struct PollBufferTests {
    @Test func answersInOrderAndDropsTheOldestLiveWhenFull() {
        var b = PollBuffer(maxLength: 3)
        var dropped = [b.add(item(1, inbox: true))]
        for n in 2...4 { dropped.append(b.add(item(n))) }
        #expect(dropped == [false, false, false, false])
        let droppedFifth = b.add(item(5))
        #expect(droppedFifth, "a fourth live delivery drops the oldest live one")
        #expect(numbers(b.take(max: 2)) == [1, 3])
        #expect(numbers(b.take(max: 10)) == [4, 5])
        #expect(b.isEmpty)
    }

    /// An answer stops at `maxBytes` of messages; one message larger than that still goes alone.
    @Test func anAnswerIsBoundedByBytesAsWellAsByCount() {
        var b = PollBuffer(maxLength: 10)
        for n in 1...4 { _ = b.add(item(n)) }
        let each = item(1).answerTailLength
        #expect(numbers(b.take(max: 10, maxBytes: 2 * each + each / 2)) == [1, 2])
        #expect(numbers(b.take(max: 10, maxBytes: 1)) == [3], "the first is taken whatever its size")
        #expect(numbers(b.take(max: 10, maxBytes: 10 * each)) == [4])
    }

    @Test func leasesAreAckedByCursorOrRunOut() {
        var b = PollBuffer(maxLength: 10)
        for n in 1...3 { _ = b.add(item(n, inbox: true)) }
        _ = b.add(item(4))
        let first = b.take(max: 2)
        let s1 = b.lease(first, now: 0, duration: 1000)
        let second = b.take(max: 10)
        let s2 = b.lease(second, now: 500, duration: 1000)
        let s3 = b.lease([], now: 600, duration: 1000)
        #expect(s1 < s2 && s2 < s3, "every answer has a cursor")
        #expect(b.leasedIDs == ["i1", "i2", "i3"])
        #expect(b.expired(now: 999).isEmpty)
        #expect(b.expired(now: 1000) == ["i1", "i2"])
        #expect(b.ack(upTo: s1).acked.isEmpty, "an expired lease is no longer acked")
        #expect(b.ack(upTo: s3).acked == ["i3"])
        #expect(!b.hasLeases)
    }

    /// A poll acking an older cursor than the newest answer says that answer never reached the
    /// client: its leases are handed back, not left for the next cursor to ack unseen.
    @Test func leasesAfterThePolledCursorAreHandedBack() {
        var b = PollBuffer(maxLength: 10)
        for n in 1...3 { _ = b.add(item(n, inbox: true)) }
        let s1 = b.lease(b.take(max: 1), now: 0, duration: 1000)
        let s2 = b.lease(b.take(max: 1), now: 0, duration: 1000)
        let s3 = b.lease(b.take(max: 1), now: 0, duration: 1000)
        #expect(b.ack(upTo: s1).acked == ["i1"])
        #expect(b.unreceived(after: s1) == ["i2", "i3"])
        #expect(b.ack(upTo: s3).acked.isEmpty, "handed back: no later cursor acks them")
        #expect(b.unreceived(after: s2).isEmpty)
        #expect(!b.hasLeases)

        // An ack come on from the node the poll arrived on: only the answers made by then.
        for n in 4...5 { _ = b.add(item(n, inbox: true)) }
        let s4 = b.lease(b.take(max: 1), now: 100, duration: 1000)
        _ = b.lease(b.take(max: 1), now: 300, duration: 1000)
        #expect(b.unreceived(after: s4 - 1, before: 200) == ["i4"], "the later answer may have been read since")
        #expect(b.leasedIDs == ["i5"])
    }

    /// A long-poll parked here answered after its client had gone to another node (the answer
    /// lost on the way); the client comes back with that node's cursor, reads the next answer
    /// made here and acks it: the lost answer is handed back, not acked unseen. One the client
    /// did read is acked by its own cursor, come on from the node it polled next, even after.
    @Test func anAnswerMadeBeforeThePollerCameFromElsewhereIsNotAckedByALaterCursor() {
        var b = PollBuffer(maxLength: 10)
        _ = b.add(item(1, inbox: true))
        let lost = b.lease(b.take(max: 1), now: 0, duration: 1000)   // i1: never reached the client
        #expect(b.polledFromElsewhere().isEmpty)                      // it comes back with another node's cursor
        _ = b.add(item(2, inbox: true))
        let read = b.lease(b.take(max: 1), now: 10, duration: 1000)   // i2
        let answer = b.ack(upTo: read)
        #expect(answer.acked == ["i2"])
        #expect(answer.unread == ["i1"], "made before the client came from elsewhere: handed back")
        #expect(b.ack(upTo: lost) == ([], []), "gone")

        // Read here, acked from the node polled next, that ack arriving after the client came back.
        _ = b.add(item(3, inbox: true))
        let s3 = b.lease(b.take(max: 1), now: 20, duration: 1000)    // i3, read
        _ = b.polledFromElsewhere()
        _ = b.polledFromElsewhere()                                   // once is enough
        _ = b.add(item(4, inbox: true))
        let s4 = b.lease(b.take(max: 1), now: 30, duration: 1000)    // i4
        #expect(b.ack(upTo: s3) == (["i3"], []), "its own cursor acks it")
        #expect(b.ack(upTo: s4) == (["i4"], []))
        #expect(!b.hasLeases)

        // With nothing leased, a poll from elsewhere marks nothing.
        _ = b.polledFromElsewhere()
        _ = b.add(item(5, inbox: true))
        let s5 = b.lease(b.take(max: 1), now: 40, duration: 1000)
        #expect(b.ack(upTo: s5) == (["i5"], []))
    }

    /// Inbox deliveries that waited here while the client read from another node (which
    /// consumed the same inbox meanwhile) go back to RabbitMQ when it comes back with that
    /// node's cursor, instead of reaching it first-time after later messages it read there
    /// (seen in a soak, 2026-12-03); live ones stay. Resumed for the poll itself, the inbox's
    /// deliveries came since, and stay.
    @Test func inboxDeliveriesThatWaitedWhileThePollerWasElsewhereGoBack() {
        var b = PollBuffer(maxLength: 10)
        _ = b.add(item(1, inbox: true))
        _ = b.add(item(2, inbox: false))
        _ = b.add(item(3, inbox: true))
        #expect(b.polledFromElsewhere() == ["i1", "i3"])
        #expect(b.take(max: 10).map(\.inboxID) == [nil], "the live one is answered")

        b.inboxResumed()
        _ = b.add(item(4, inbox: true))
        #expect(b.polledFromElsewhere().isEmpty, "came after the inbox was resumed for this poll")
        #expect(b.take(max: 10).map(\.inboxID) == ["i4"])
        _ = b.add(item(5, inbox: true))
        #expect(b.polledFromElsewhere() == ["i5"], "the mark lasts one poll")

        b.inboxResumed()
        _ = b.add(item(6, inbox: true))
        _ = b.take(max: 10)                                           // that poll's answer
        _ = b.add(item(7, inbox: true))
        #expect(b.polledFromElsewhere() == ["i7"], "an answer ends the mark")
    }

    /// A parked poll is answered by the delivery itself, inside `deliver`: no clock involved
    /// (its deadline is an hour away).
    @Test func aParkedPollIsAnsweredByTheDeliveryItself() {
        let output = PollOutput(maxLength: 10)
        let woken = NIOLockedValueBox(0)
        let id = output.park(timeout: .hours(1), deadlines: Self.deadlines) {
            woken.withLockedValue { $0 += 1 }
        }
        #expect(id != nil && output.hasWaiter)
        #expect(woken.withLockedValue { $0 } == 0)
        _ = output.deliver(item(1).frame, inboxID: nil)
        #expect(woken.withLockedValue { $0 } == 1, "woken by the delivery")
        #expect(!output.hasWaiter)
        // With something buffered, a poll does not park at all.
        #expect(output.park(timeout: .hours(1), deadlines: Self.deadlines) { woken.withLockedValue { $0 += 1 } } == nil)
        #expect(woken.withLockedValue { $0 } == 1)
    }

    /// A poll parked as a request (the event-loop path) takes its answer under the lock of the
    /// delivery that ends its wait: the item, a cursor of its own, its poll ended. One whose
    /// client went takes nothing, and the delivery waits for the next poll.
    @Test func aParkedRequestTakesItsAnswerInTheDelivery() throws {
        let output = PollOutput(maxLength: 10)
        let sink = RecordingSink()
        let request = PollRequest(sink: sink, max: 10, node: "n1", leaseMilliseconds: 60_000)
        #expect(output.withActivity { $0.start(now: 0) })
        guard case .parked = output.answerOrPark(request, timeout: .hours(1), deadlines: Self.deadlines) else {
            Issue.record("an empty buffer parks the poll")
            return
        }
        #expect(sink.answers.isEmpty)
        _ = output.deliver(item(1).frame, inboxID: nil)
        let first = try #require(sink.answers.first, "answered by the delivery")
        #expect(numbers(first.messages) == [1] && first.cursor == "n1.1" && !first.more)
        #expect(output.withActivity { $0.polls } == 0, "the poll ended with its answer")
        // Buffered with no poll parked; the next poll is answered at once, with a cursor of its own.
        _ = output.deliver(item(2).frame, inboxID: nil)
        guard case .answered(let second) = output.answerOrPark(request, timeout: .hours(1), deadlines: Self.deadlines) else {
            Issue.record("a poll finding deliveries is answered at once")
            return
        }
        #expect(numbers(second.messages) == [2] && second.cursor == "n1.2")
        // The client went: its parked poll takes nothing, and what came waits.
        let gone = RecordingSink()
        gone.alive = false
        let request3 = PollRequest(sink: gone, max: 10, node: "n1", leaseMilliseconds: 60_000)
        guard case .parked = output.answerOrPark(request3, timeout: .hours(1), deadlines: Self.deadlines) else {
            Issue.record("an empty buffer parks the poll")
            return
        }
        _ = output.deliver(item(3).frame, inboxID: nil)
        #expect(gone.answers.first?.messages.isEmpty == true)
        #expect(numbers(output.withBuffer { $0.take(max: 10) }) == [3])
    }

    static let deadlines = PollDeadlines(loop: MultiThreadedEventLoopGroup.singleton.any(), longest: .hours(1))

    /// A poll's deadline wakes it; an earlier poll's deadline, coming round after a delivery
    /// answered it, does not wake the poll parked after it.
    @Test func theDeadlineWheelWakesOnlyThePollItWasSetFor() async {
        let deadlines = PollDeadlines(loop: MultiThreadedEventLoopGroup.singleton.any(), longest: .seconds(60))
        let output = PollOutput(maxLength: 10)
        let early = NIOLockedValueBox(0)
        #expect(output.park(timeout: .milliseconds(200), deadlines: deadlines) { early.withLockedValue { $0 += 1 } } != nil)
        _ = output.deliver(item(1).frame, inboxID: nil)
        _ = output.withBuffer { $0.take(max: 10) }
        #expect(early.withLockedValue { $0 } == 1)
        // Parked again, for an hour: the first poll's slot comes round and must leave it be;
        // a third poll with a short deadline (a sentinel) is woken by the wheel, taking its place.
        let second = NIOLockedValueBox(0)
        #expect(output.park(timeout: .seconds(50), deadlines: deadlines) { second.withLockedValue { $0 += 1 } } != nil)
        let other = PollOutput(maxLength: 10)
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            #expect(other.park(timeout: .milliseconds(300), deadlines: deadlines) { c.resume() } != nil)
        }
        #expect(second.withLockedValue { $0 } == 0, "the answered poll's deadline did not wake the next one")
        #expect(output.hasWaiter)
        output.wake()
        #expect(second.withLockedValue { $0 } == 1)
    }

    /// A poller that polls again as soon as each poll is answered puts its output in the wheel
    /// once per `wait`, not once per poll.
    @Test func aPollerPollingAgainAndAgainIsInTheWheelOnce() {
        let deadlines = PollDeadlines(loop: MultiThreadedEventLoopGroup.singleton.any(), longest: .seconds(60))
        let output = PollOutput(maxLength: 10)
        let sink = RecordingSink()
        for n in 1...100 {
            let request = PollRequest(sink: sink, max: 10, node: "n", leaseMilliseconds: 1000)
            guard case .parked = output.answerOrPark(request, timeout: .seconds(30), deadlines: deadlines) else {
                Issue.record("poll \(n) was not parked")
                return
            }
            _ = output.deliver(item(n).frame, inboxID: nil)
        }
        #expect(sink.answers.count == 100)
        #expect(deadlines.entryCount == 1)
    }

    /// A poll with a shorter `wait` than the one before it is woken at its own deadline, not
    /// when the wheel comes round to the output for the earlier poll's.
    @Test func aShorterWaitAfterALongerOneTimesOutOnItsOwn() async {
        let deadlines = PollDeadlines(loop: MultiThreadedEventLoopGroup.singleton.any(), longest: .seconds(60))
        let output = PollOutput(maxLength: 10)
        #expect(output.park(timeout: .seconds(50), deadlines: deadlines) {} != nil)
        _ = output.deliver(item(1).frame, inboxID: nil)
        _ = output.withBuffer { $0.take(max: 10) }
        let short = NIOLockedValueBox(0)
        #expect(output.park(timeout: .milliseconds(200), deadlines: deadlines) { short.withLockedValue { $0 += 1 } } != nil)
        // A sentinel with a deadline well after the short one's.
        let other = PollOutput(maxLength: 10)
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            #expect(other.park(timeout: .seconds(2), deadlines: deadlines) { c.resume() } != nil)
        }
        #expect(short.withLockedValue { $0 } == 1)
    }

    @Test func waitingInboxDeliveriesAreHandedBackLiveOnesStay() {
        var b = PollBuffer(maxLength: 10)
        _ = b.add(item(1))
        _ = b.add(item(2, inbox: true))
        _ = b.add(item(3))
        #expect(b.removeWaitingInbox() == ["i2"])
        #expect(numbers(b.take(max: 10)) == [1, 3])
    }

    @Test func aCursorIsReadOnlyWhenThisNodeMadeIt() {
        #expect(PollService.sequence(of: "node-a.17", node: "node-a") == 17)
        #expect(PollService.sequence(of: "node.a.0", node: "node.a") == 0)
        #expect(PollService.sequence(of: "node-b.17", node: "node-a") == nil)
        #expect(PollService.sequence(of: "node-a.", node: "node-a") == nil)
        #expect(PollService.sequence(of: "node-a.+1", node: "node-a") == nil)
        #expect(PollService.sequence(of: "node-a.1x", node: "node-a") == nil)
        #expect(PollService.sequence(of: "node-a17", node: "node-a") == nil)
        #expect(PollService.sequence(of: "node-a.18446744073709551615", node: "node-a") == UInt64.max)
        #expect(PollService.sequence(of: "node-a.18446744073709551616", node: "node-a") == nil)
        #expect(PollService.sequence(of: "", node: "") == nil)
    }
}

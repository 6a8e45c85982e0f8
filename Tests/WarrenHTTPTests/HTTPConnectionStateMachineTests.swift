import NIOCore
import Testing
@testable import WarrenHTTP

/// The edge's connection state machine, event by event, with no socket: each hostile client's
/// probe (a stalled loop, answers piling up, a head timeout dodged, bodies pinned) as the
/// events it makes, and the actions the machine answers with.
@Suite("The HTTP connection state machine")
struct HTTPConnectionStateMachineTests {
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    static let settings = HTTPConnectionStateMachine.Settings(headTimeout: .seconds(10), idleTimeout: .seconds(75), maxBody: 1024,
                                                              maxReadAhead: 4096)

    /// A machine, started, and its first action.
    static func started(budget: BodyBudget = BodyBudget(limit: 1 << 20)) -> HTTPConnectionStateMachine {
        var machine = HTTPConnectionStateMachine(settings: settings, budget: budget, now: t0)
        #expect(describe(machine.start(now: t0)) == "schedule +75s")
        return machine
    }

    static func at(_ seconds: Int64) -> NIODeadline { t0 + .seconds(seconds) }

    /// An action as a line a test can compare.
    static func describe(_ action: HTTPConnectionStateMachine.Action) -> String {
        switch action {
        case .none: return "none"
        case .serve(let request):
            switch request.kind {
            case .head(let head): return "serve \(head.method.name) \(head.target)" + (request.body.readableBytes > 0 ? " body \(String(buffer: request.body))" : "")
            case .repeated: return "serve repeated"
            }
        case .write(let bytes): return "write \(String(buffer: bytes))"
        case .writeAndClose(let bytes): return "writeAndClose \(String(buffer: bytes))"
        case .refuse(let refusal): return "refuse \(refusal.status)"
        case .close: return "close"
        case .stopReading: return "stopReading"
        case .resumeReading: return "resumeReading"
        case .schedule(let deadline): return "schedule +\((deadline - t0).nanoseconds / 1_000_000_000)s"
        }
    }

    static func read(_ machine: inout HTTPConnectionStateMachine, _ text: String, at now: NIODeadline = t0) -> String {
        describe(machine.read(ByteBuffer(string: text), now: now))
    }

    static let poll = "GET /v1/poll/s?wait=25 HTTP/1.1\r\nHost: x\r\n\r\n"
    static let health = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"

    // MARK: requests and answers

    @Test func aRequestIsServedThenAnsweredAndTheConnectionWaitsForTheNext() {
        var m = Self.started()
        #expect(Self.read(&m, Self.poll) == "serve GET /v1/poll/s?wait=25")
        #expect(Self.describe(m.dispatched(now: Self.t0)) == "none")
        #expect(!m.answerCloses)
        #expect(Self.describe(m.answered(ByteBuffer(string: "A"), now: Self.t0)) == "write A")
        #expect(Self.describe(m.next(now: Self.t0)) == "none")
    }

    /// Pipelined requests are answered one at a time, in order; an answer given while the
    /// request is still being dispatched does not take the next one from inside it.
    @Test func pipelinedRequestsAreServedInOrderOneAtATime() {
        var m = Self.started()
        #expect(Self.read(&m, Self.poll + Self.health) == "serve GET /v1/poll/s?wait=25")
        #expect(Self.describe(m.answered(ByteBuffer(string: "A"), now: Self.t0)) == "write A")
        #expect(Self.describe(m.next(now: Self.t0)) == "none", "not re-entered from the answer")
        #expect(Self.describe(m.dispatched(now: Self.t0)) == "serve GET /healthz")
        #expect(Self.describe(m.dispatched(now: Self.t0)) == "none")
        #expect(Self.describe(m.answered(ByteBuffer(string: "B"), now: Self.t0)) == "write B")
        #expect(Self.describe(m.next(now: Self.t0)) == "none")
    }

    @Test func aHeadSplitOverReadsIsServedWhenWhole() {
        var m = Self.started()
        #expect(Self.read(&m, "GET /healthz HT") == "schedule +10s")
        #expect(Self.describe(m.next(now: Self.t0)) == "none")
        #expect(Self.read(&m, "TP/1.1\r\nHost: x\r\n", at: Self.at(1)) == "none")
        #expect(Self.read(&m, "\r\n", at: Self.at(2)) == "serve GET /healthz")
    }

    @Test func connectionCloseAndHTTP10AnswersCloseTheOutputThenLinger() {
        for head in ["GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET /healthz HTTP/1.0\r\n\r\n"] {
            var m = Self.started()
            #expect(Self.read(&m, head) == "serve GET /healthz")
            #expect(m.answerCloses)
            #expect(Self.describe(m.answered(ByteBuffer(string: "A"), now: Self.t0)) == "writeAndClose A")
            // What the client still sends is dropped; its close ends the connection.
            #expect(Self.describe(m.next(now: Self.t0)) == "none")
            #expect(Self.read(&m, Self.health) == "none")
            #expect(Self.describe(m.inputClosed(now: Self.t0)) == "close")
        }
    }

    @Test func aLingeringConnectionClosesAtTheIdleTimeout() {
        var m = Self.started()
        #expect(Self.read(&m, "GET /healthz HTTP/1.0\r\n\r\n") == "serve GET /healthz")
        #expect(Self.describe(m.answered(ByteBuffer(string: "A"), now: Self.at(5))) == "writeAndClose A")
        #expect(Self.describe(m.next(now: Self.at(5))) == "none", "the idle timer (at 75 s) comes first")
        #expect(Self.describe(m.timerFired(now: Self.at(75))) == "schedule +80s")
        #expect(Self.describe(m.timerFired(now: Self.at(80))) == "close")
    }

    // MARK: timeouts

    @Test func anIdleConnectionClosesAfterTheIdleTimeoutSinceItsLastAnswer() {
        var m = Self.started()
        #expect(Self.read(&m, Self.health) == "serve GET /healthz")
        _ = m.dispatched(now: Self.t0)
        _ = m.answered(ByteBuffer(string: "A"), now: Self.at(30))
        #expect(Self.describe(m.next(now: Self.at(30))) == "none")
        #expect(Self.describe(m.timerFired(now: Self.at(75))) == "schedule +105s")
        #expect(Self.describe(m.timerFired(now: Self.at(105))) == "close")
    }

    /// Probe: a head trickled byte by byte is closed at `http.head_timeout` from its first byte.
    @Test func aHeadNotWholeWithinTheHeadTimeoutIsClosed() {
        var m = Self.started()
        #expect(Self.read(&m, "G") == "schedule +10s")
        #expect(Self.read(&m, "E", at: Self.at(5)) == "none")
        #expect(Self.describe(m.timerFired(now: Self.at(10))) == "close")
    }

    /// Probe: empty lines before a head count toward its timeout (they were a way to hold a
    /// connection until the idle timeout).
    @Test func emptyLinesBeforeAHeadCountTowardItsTimeout() {
        var m = Self.started()
        #expect(Self.read(&m, "\r\n\r\n") == "schedule +10s")
        #expect(Self.read(&m, "\r\n", at: Self.at(9)) == "none")
        #expect(Self.describe(m.timerFired(now: Self.at(10))) == "close")
    }

    /// Probe: after one complete request, a second head is held to the same timeout (it was
    /// the first head only).
    @Test func everyHeadOfAConnectionHasTheHeadTimeout() {
        var m = Self.started()
        #expect(Self.read(&m, Self.health) == "serve GET /healthz")
        _ = m.dispatched(now: Self.t0)
        _ = m.answered(ByteBuffer(string: "A"), now: Self.at(1))
        #expect(Self.describe(m.next(now: Self.at(1))) == "none")
        #expect(Self.read(&m, "GET /healthz HTTP/1.1\r\nHo", at: Self.at(2)) == "schedule +12s")
        #expect(Self.describe(m.timerFired(now: Self.at(12))) == "close")
        // And a half head pipelined behind a request counts from when it is waited for.
        var p = Self.started()
        #expect(Self.read(&p, Self.poll + "GET /hea") == "serve GET /v1/poll/s?wait=25")
        #expect(Self.describe(p.dispatched(now: Self.t0)) == "none")
        #expect(Self.describe(p.answered(ByteBuffer(string: "A"), now: Self.at(20))) == "write A")
        #expect(Self.describe(p.next(now: Self.at(20))) == "schedule +30s")
    }

    /// A body's bytes must come within the idle timeout of each other.
    @Test func aBodyThatStopsIsClosedAtTheIdleTimeout() {
        var m = Self.started()
        #expect(Self.read(&m, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345") == "none")
        #expect(Self.read(&m, "6", at: Self.at(50)) == "none")
        #expect(Self.describe(m.timerFired(now: Self.at(75))) == "schedule +125s")
        #expect(Self.describe(m.timerFired(now: Self.at(125))) == "close")
    }

    /// A request being answered (a long-poll up to poll.max_wait) is not idle.
    @Test func aRequestBeingAnsweredIsNotIdle() {
        var m = Self.started()
        #expect(Self.read(&m, Self.poll) == "serve GET /v1/poll/s?wait=25")
        _ = m.dispatched(now: Self.t0)
        #expect(Self.describe(m.parked(now: Self.t0)) == "none")
        #expect(Self.describe(m.timerFired(now: Self.at(75))) == "schedule +150s")
    }

    // MARK: bodies

    @Test func aBodyIsReadBeforeTheRequestIsServed() {
        var m = Self.started()
        #expect(Self.read(&m, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhe") == "none")
        #expect(Self.read(&m, "lloGET") == "serve POST /v1/messages body hello")
    }

    /// Probe (smuggling): a request inside a body is the body's bytes, not a request.
    @Test func aRequestInsideABodyIsBody() {
        var m = Self.started()
        let inner = "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"
        let text = "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: \(inner.utf8.count)\r\n\r\n\(inner)" + Self.health
        #expect(Self.read(&m, text) == "serve POST /v1/messages body \(inner)")
        _ = m.answered(ByteBuffer(string: "A"), now: Self.t0)
        #expect(Self.describe(m.dispatched(now: Self.t0)) == "serve GET /healthz")
    }

    @Test func aClientWaitingForContinueIsToldOnceThenItsBodyIsRead() {
        var m = Self.started()
        let head = "POST /v1/messages HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"
        #expect(Self.read(&m, head) == "write HTTP/1.1 100 Continue\r\n\r\n")
        #expect(Self.describe(m.next(now: Self.t0)) == "none")
        #expect(Self.read(&m, "{") == "none")
        #expect(Self.read(&m, "}") == "serve POST /v1/messages body {}")
        // A client that sent its body anyway is not told.
        var eager = Self.started()
        #expect(Self.read(&eager, head + "{}") == "serve POST /v1/messages body {}")
    }

    @Test func aBodyOverTheLimitIsRefused413BeforeItIsRead() {
        var m = Self.started()
        #expect(Self.read(&m, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 1025\r\n\r\n") == "refuse 413")
        var waiting = Self.started()
        let head = "POST /v1/messages HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n"
        #expect(Self.read(&waiting, head) == "refuse 413", "no 100 Continue for a body that is refused")
        #expect(Self.describe(waiting.next(now: Self.t0)) == "none")
        #expect(Self.read(&waiting, String(repeating: "x", count: 5000)) == "none", "dropped while the output closes")
    }

    @Test func aChunkedBodyIsDecoded() {
        var m = Self.started()
        let head = "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(Self.read(&m, head + "5;a=b\r\nhel") == "none")
        #expect(Self.read(&m, "lo\r\n1\r\n!\r\n0\r\nX-T: 1\r\n\r\n") == "serve POST /v1/messages body hello!")
    }

    /// Probe: a chunk size of sixteen `f`s is no size: 400, not a 2⁶⁴ − 1 byte chunk.
    @Test func aChunkSizeThatOverflowsIs400AndOneOverTheLimit413() {
        let head = "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        var overflow = Self.started()
        #expect(Self.read(&overflow, head + "ffffffffffffffff\r\n") == "refuse 400")
        var large = Self.started()
        #expect(Self.read(&large, head + "401\r\n") == "refuse 413")
        var total = Self.started()
        #expect(Self.read(&total, head + "400\r\n" + String(repeating: "x", count: 1024) + "\r\n1\r\n") == "refuse 413")
        var short = Self.started()
        #expect(Self.read(&short, head + "3\r\nabcd\r\n0\r\n\r\n") == "refuse 400")
    }

    /// Probe: a hundred clients each holding a body one byte short pinned a hundred bodies; the
    /// process's budget refuses past its limit (503), and a body's bytes come back once answered.
    @Test func bodiesPastTheProcessBudgetAreRefused503() {
        let budget = BodyBudget(limit: 1500)
        var a = Self.started(budget: budget)
        var b = Self.started(budget: budget)
        let head = "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
        #expect(Self.read(&a, head + String(repeating: "a", count: 999)) == "none")
        #expect(budget.inUse == 999)
        #expect(Self.read(&b, head + String(repeating: "b", count: 600)) == "refuse 503")
        #expect(budget.inUse == 999)
        #expect(Self.read(&a, "a") == "serve POST /v1/messages body " + String(repeating: "a", count: 1000))
        #expect(budget.inUse == 1000)
        _ = a.dispatched(now: Self.t0)
        _ = a.answered(ByteBuffer(string: "A"), now: Self.t0)
        #expect(budget.inUse == 0)
        // A connection that closes with half a body gives it back too.
        var c = Self.started(budget: budget)
        #expect(Self.read(&c, head + "ccc") == "none")
        #expect(budget.inUse == 3)
        c.closed()
        #expect(budget.inUse == 0)
    }

    @Test func aBodyCutShortByTheClientsCloseIs400() {
        var m = Self.started()
        #expect(Self.read(&m, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{}") == "none")
        #expect(Self.describe(m.inputClosed(now: Self.t0)) == "refuse 400")
    }

    // MARK: backpressure

    /// Probe: a client pipelining thousands of polls and reading nothing. Once the output is
    /// over `http.max_pending_output` (the driver says it is not writable), no request is
    /// served and reading stops; nothing more happens until the output drains.
    @Test func aClientThatReadsNothingStopsBeingReadOnceItsOutputBacksUp() {
        var m = Self.started()
        let many = String(repeating: Self.poll, count: 20)
        #expect(Self.read(&m, many) == "serve GET /v1/poll/s?wait=25")
        var served = 1
        for _ in 0..<5 {
            _ = m.answered(ByteBuffer(string: "A"), now: Self.t0)
            if case .serve = m.dispatched(now: Self.t0) { served += 1 }
        }
        #expect(served == 6)
        // The sixth answer's write went over the mark.
        _ = m.answered(ByteBuffer(string: "A"), now: Self.t0)
        #expect(Self.describe(m.writabilityChanged(false, now: Self.t0)) == "stopReading")
        #expect(Self.describe(m.dispatched(now: Self.t0)) == "none", "no request served while the output is backed up")
        #expect(Self.read(&m, Self.poll) == "none", "a read already under way is held, not served")
        #expect(Self.describe(m.writabilityChanged(true, now: Self.t0)) == "serve GET /v1/poll/s?wait=25")
    }

    /// Reading resumes once the backed-up output drained and the requests held are served.
    @Test func readingResumesWhenTheOutputDrains() {
        var m = Self.started()
        #expect(Self.read(&m, Self.health) == "serve GET /healthz")
        _ = m.dispatched(now: Self.t0)
        _ = m.answered(ByteBuffer(string: "A"), now: Self.t0)
        #expect(Self.describe(m.writabilityChanged(false, now: Self.t0)) == "stopReading")
        #expect(Self.describe(m.next(now: Self.t0)) == "none")
        #expect(Self.describe(m.writabilityChanged(true, now: Self.t0)) == "resumeReading")
        #expect(Self.describe(m.next(now: Self.t0)) == "none")
    }

    /// A client that reads none of its answers for the idle timeout is closed.
    @Test func aClientThatReadsNothingIsClosedAtTheIdleTimeout() {
        var m = Self.started()
        #expect(Self.read(&m, Self.health + Self.health) == "serve GET /healthz")
        _ = m.answered(ByteBuffer(string: "A"), now: Self.at(1))
        _ = m.writabilityChanged(false, now: Self.at(1))
        #expect(Self.describe(m.dispatched(now: Self.at(1))) == "none")
        #expect(Self.describe(m.timerFired(now: Self.at(75))) == "schedule +76s")
        #expect(Self.describe(m.timerFired(now: Self.at(76))) == "close")
    }

    /// Requests read ahead of one being answered are held up to a bound; past it, reading stops.
    @Test func readingAheadOfALongPollIsBounded() {
        var m = Self.started()
        #expect(Self.read(&m, Self.poll) == "serve GET /v1/poll/s?wait=25")
        _ = m.dispatched(now: Self.t0)
        _ = m.parked(now: Self.t0)
        #expect(Self.read(&m, String(repeating: Self.health, count: 100)) == "none")
        #expect(Self.read(&m, String(repeating: Self.health, count: 100)) == "stopReading")
        #expect(Self.describe(m.answered(ByteBuffer(string: "A"), now: Self.t0)) == "write A")
        #expect(Self.describe(m.next(now: Self.t0)) == "serve GET /healthz")
    }

    // MARK: the client's close, and ours

    /// A parked long-poll whose client closed its side is a client gone: closed now.
    @Test func aParkedPollsClientClosingClosesTheConnection() {
        var m = Self.started()
        #expect(Self.read(&m, Self.poll) == "serve GET /v1/poll/s?wait=25")
        _ = m.dispatched(now: Self.t0)
        _ = m.parked(now: Self.t0)
        #expect(Self.describe(m.inputClosed(now: Self.t0)) == "close")
        #expect(Self.describe(m.answered(ByteBuffer(string: "late"), now: Self.t0)) == "none")
        // A poll readied in a task after its client went parks, and is closed then.
        var late = Self.started()
        #expect(Self.read(&late, Self.poll) == "serve GET /v1/poll/s?wait=25")
        _ = late.dispatched(now: Self.t0)
        #expect(Self.describe(late.inputClosed(now: Self.t0)) == "none")
        #expect(Self.describe(late.parked(now: Self.t0)) == "close")
    }

    /// A client that sent its requests and closed its side gets every answer, then the close.
    @Test func requestsSentBeforeTheClientsCloseAreAnswered() {
        var m = Self.started()
        #expect(Self.read(&m, Self.health + Self.health) == "serve GET /healthz")
        _ = m.dispatched(now: Self.t0)
        #expect(Self.describe(m.inputClosed(now: Self.t0)) == "none")
        #expect(Self.describe(m.answered(ByteBuffer(string: "A"), now: Self.t0)) == "write A")
        #expect(Self.describe(m.next(now: Self.t0)) == "serve GET /healthz")
        _ = m.dispatched(now: Self.t0)
        #expect(Self.describe(m.answered(ByteBuffer(string: "B"), now: Self.t0)) == "write B")
        #expect(Self.describe(m.next(now: Self.t0)) == "close")
        // Half a head and then the close: closed.
        var half = Self.started()
        #expect(Self.read(&half, "GET /x") == "schedule +10s")
        #expect(Self.describe(half.inputClosed(now: Self.t0)) == "close")
    }

    @Test func aGracefulShutdownClosesAnIdleConnectionNowAndABusyOneAfterItsAnswer() {
        var idle = Self.started()
        #expect(Self.describe(idle.quiesce(now: Self.t0)) == "close")
        var busy = Self.started()
        #expect(Self.read(&busy, Self.poll + Self.health) == "serve GET /v1/poll/s?wait=25")
        _ = busy.dispatched(now: Self.t0)
        #expect(Self.describe(busy.quiesce(now: Self.t0)) == "none")
        #expect(busy.answerCloses)
        #expect(Self.describe(busy.answered(ByteBuffer(string: "A"), now: Self.t0)) == "writeAndClose A")
    }

    // MARK: refusals

    /// Probes: heads HTTP/1.1 refuses, each refused with its status and the connection closed.
    @Test(arguments: [
        ("GET / HTTP/1.1\r\n\r\n", "refuse 400"),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "refuse 400"),
        ("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "refuse 400"),
        ("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "refuse 400"),
        ("GET / HTTP/1.1\nHost: x\n\n", "refuse 400"),
        ("GET / HTTP/1.1\rHost: x\r\n\r\n", "refuse 400"),
        ("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", "refuse 400"),
    ])
    func aHeadHTTPRefusesIsRefused(_ text: String, _ expected: String) {
        var m = Self.started()
        #expect(Self.read(&m, text + Self.health) == expected)
        #expect(Self.describe(m.next(now: Self.t0)) == "none")
        #expect(Self.read(&m, Self.health) == "none", "nothing after a refused head is read as a request")
    }

    // MARK: handing over

    @Test func takingOverGivesWhatWasReadAfterTheRequest() {
        var m = Self.started()
        #expect(Self.read(&m, Self.health + "\u{81}\u{85}xx") == "serve GET /healthz")
        #expect(String(buffer: m.takeOver()) == "\u{81}\u{85}xx")
        #expect(Self.read(&m, "more") == "none")
        #expect(Self.describe(m.answered(ByteBuffer(string: "A"), now: Self.t0)) == "none")
    }

    /// A poll that repeats the kept one but for its `ack` is recognised without a parse.
    @Test func aRepeatedPollIsRecognisedByItsBytes() throws {
        var m = Self.started()
        let first = "GET /v1/poll/s?ack=n.1&wait=25 HTTP/1.1\r\nHost: x\r\n\r\n"
        guard case .serve(let request) = m.read(ByteBuffer(string: first), now: Self.t0) else {
            Issue.record("not served")
            return
        }
        let template = try #require(request.bytes.withUnsafeReadableBytes { RepeatedPoll(head: $0) })
        m.keep(template)
        _ = m.dispatched(now: Self.t0)
        _ = m.answered(ByteBuffer(string: "A"), now: Self.t0)
        #expect(Self.read(&m, "GET /v1/poll/s?ack=n.2&wait=25 HTTP/1.1\r\nHost: x\r\n\r\n") == "serve repeated")
        _ = m.dispatched(now: Self.t0)
        _ = m.answered(ByteBuffer(string: "A"), now: Self.t0)
        #expect(Self.read(&m, "GET /v1/poll/s?ack=n.3&wait=5 HTTP/1.1\r\nHost: x\r\n\r\n") == "serve GET /v1/poll/s?ack=n.3&wait=5")
    }
}

import NIOCore
import NIOHTTP1

/// Shared by one run's publishing connections; touched only on the publisher's loop.
final class NchanPublishState: @unchecked Sendable {
    let keys: [String]
    let promise: EventLoopPromise<BenchPublisher.Outcome>
    let rate: Int?
    let loop: any EventLoop
    var next = 0
    var outcome: BenchPublisher.Outcome
    private var idle: [any Channel] = []

    init(keys: [String], promise: EventLoopPromise<BenchPublisher.Outcome>, rate: Int?, loop: any EventLoop) {
        self.keys = keys
        self.promise = promise
        self.rate = rate
        self.loop = loop
        outcome = BenchPublisher.Outcome(started: BenchClock.now(), finished: 0, confirmed: 0, failed: 0)
    }

    func start(_ channels: [any Channel]) {
        outcome.started = BenchClock.now()
        if keys.isEmpty { return promise.succeed(outcome) }
        guard let rate, rate > 0 else {
            for c in channels { send(on: c) }
            return
        }
        idle = channels
        tick(begin: NIODeadline.now(), interval: .nanoseconds(Int64(1_000_000_000 / rate)))
    }

    /// Paced: one message now, the next at its own deadline (a tick with no connection free
    /// counts that message as failed).
    private func tick(begin: NIODeadline, interval: TimeAmount) {
        guard next < keys.count else { return }
        if let c = idle.popLast() {
            send(on: c)
        } else {
            next += 1
            settle(ok: false)
        }
        loop.scheduleTask(deadline: begin + interval * Int64(next)) { self.tick(begin: begin, interval: interval) }
    }

    /// Sends the next message on `channel`; false when none is left.
    @discardableResult
    func send(on channel: any Channel) -> Bool {
        guard next < keys.count else { return false }
        let seq = next
        next += 1
        var body = channel.allocator.buffer(capacity: 32)
        Stamp(seq: seq, sentNanos: BenchClock.now()).write(to: &body)
        var h = HTTPHeaders()
        h.add(name: "Host", value: "127.0.0.1")
        h.add(name: "Content-Length", value: String(body.readableBytes))
        channel.write(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .POST, uri: "/pub/\(keys[seq])", headers: h)),
                      promise: nil)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        return true
    }

    /// A publish was answered on `channel`.
    func answered(_ channel: any Channel, ok: Bool) {
        settle(ok: ok)
        if rate == nil { send(on: channel) } else { idle.append(channel) }
    }

    private func settle(ok: Bool) {
        if ok { outcome.confirmed += 1 } else { outcome.failed += 1 }
        if outcome.confirmed + outcome.failed == keys.count {
            outcome.finished = BenchClock.now()
            promise.succeed(outcome)
        }
    }
}

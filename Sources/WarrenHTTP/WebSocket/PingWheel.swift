import NIOCore
import NIOPosix

/// Pings the WebSockets of one event loop from one timer: a wheel of one-second slots, each
/// socket in the slot it joined, every slot visited once per ping period.
///
/// A repeated task per socket would put one entry per socket in the event loop's timer heap,
/// and NIO removes a cancelled entry by searching the heap: with 10,000 open sockets every
/// close (and every other cancelled timer on the loop) scanned 10,000 entries under the
/// loop's lock (BENCHMARKS.md, issue 18). Here joining and leaving are a dictionary insert and
/// removal. One wheel per thread and period, touched only on its loop's thread: no lock.
final class PingWheel {
    private static let perThread = ThreadSpecificVariable<Box>()

    /// The thread's wheels, by period in seconds (nodes in one process may differ). Only ever
    /// touched by the thread it belongs to (a thread-specific value).
    private final class Box: @unchecked Sendable { var wheels: [Int: PingWheel] = [:] }

    private let loop: any EventLoop
    private var slots: [[ObjectIdentifier: WebSocketConnectionHandler]]
    private var cursor = 0
    private var count = 0
    private var timer: RepeatedTask?

    private init(loop: any EventLoop, period: Int) {
        self.loop = loop
        slots = Array(repeating: [:], count: max(1, period))
    }

    /// The calling loop's wheel for `period` seconds. On `loop`'s thread.
    static func on(_ loop: any EventLoop, period: Int) -> PingWheel {
        let box = perThread.currentValue ?? {
            let box = Box()
            perThread.currentValue = box
            return box
        }()
        if let wheel = box.wheels[period] { return wheel }
        let wheel = PingWheel(loop: loop, period: period)
        box.wheels[period] = wheel
        return wheel
    }

    /// Adds a socket; its first ping comes one period from now. Returns its slot.
    func join(_ handler: WebSocketConnectionHandler) -> Int {
        slots[cursor][ObjectIdentifier(handler)] = handler
        count += 1
        if timer == nil {
            let bound = NIOLoopBound(self, eventLoop: loop)
            timer = loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in bound.value.tick() }
        }
        return cursor
    }

    func leave(_ handler: WebSocketConnectionHandler, slot: Int) {
        guard slots[slot].removeValue(forKey: ObjectIdentifier(handler)) != nil else { return }
        count -= 1
        if count == 0 {
            timer?.cancel()
            timer = nil
        }
    }

    private func tick() {
        cursor = (cursor + 1) % slots.count
        // A ping may close a socket, which leaves the wheel: iterate a copy.
        for handler in slots[cursor].values { handler.pingTick() }
    }
}

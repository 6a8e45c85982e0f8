#if os(Linux)
// Glibc's module leaves out <sys/epoll.h> and <sys/eventfd.h>: CWarrenEpoll has them.
import CWarrenEpoll
import Foundation
import Glibc
import HeapModule
import NIOCore
import Synchronization
import WarrenCore

/// One thread of the ``EpollDoor``: an epoll set (level-triggered) of poller connections
/// (``EpollConnection``), and a NIO `EventLoop`, so that Warren's session model, which hands a
/// session's deliveries, answers and timers to its home loop, runs on it as on NIO's loops.
///
/// Per answer it makes one `recv`, one `send` and the `setsockopt` before it (``AckDeferral``),
/// and nothing else: no channel, pipeline, promise or write queue. Tasks from other threads
/// (``execute(_:)``) are a list under a lock and one `eventfd` write per batch; timers are a heap
/// touched on the loop's thread only. The loops of one door also share a bell (``EpollBell``), so
/// that the live fan-out wakes them all with one write (``BatchWakeEventLoop``).
final class EpollLoop: BatchWakeEventLoop, @unchecked Sendable {
    private let epoll: Int32
    private let wakeFD: Int32
    private let bell: EpollBell?
    /// Connections by descriptor (touched on this thread only).
    private var connections: [EpollConnection?] = []
    /// Where each `read` lands before it is copied into the connection's buffer.
    private var scratch = [UInt8](repeating: 0, count: 16 << 10)
    private let tasks = Mutex<(list: [@Sendable () -> Void], woken: Bool)>(([], false))
    /// Timers by deadline (on this thread only); a cancelled one stays until it is due.
    private var timers = Heap<EpollTimer>()
    private var timerCount: UInt64 = 0
    private var thread = pthread_t()
    private let stopped = Atomic<Bool>(false)
    /// Left when the thread ends.
    private let running = DispatchGroup()
    /// What this loop's listening socket, if it has one, does with a readable event.
    private var onListener: (fd: Int32, accept: () -> Void)?
    /// Connections open on this loop, for the door's graceful shutdown.
    var openCount: Int { connectionCount }
    private var connectionCount = 0

    /// `name` is the thread's (15 bytes at most are shown); `bell` is shared with the other loops
    /// of the door.
    init(name: String, bell: EpollBell? = nil) {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        self.bell = bell
        precondition(epoll >= 0 && wakeFD >= 0, "cannot set up an epoll loop: errno \(errno)")
        watch(wakeFD, events: EPOLLIN.rawValue)
        // Edge-triggered, and never read: each ring is one event for every loop of the door.
        if let bell { watch(bell.fd, events: EPOLLIN.rawValue | EPOLLET.rawValue) }
        let started = DispatchSemaphore(value: 0)
        running.enter()
        let thread = Thread { [self] in
            self.thread = pthread_self()
            // Foundation's `Thread.name` does not name the system thread here (`top -H`, perf).
            _ = warren_name_thread(String(name.utf8.prefix(15))!)
            started.signal()
            run()
        }
        thread.name = name
        thread.start()
        started.wait()
    }

    // MARK: EventLoop

    var inEventLoop: Bool { pthread_equal(pthread_self(), thread) != 0 }

    func execute(_ task: @escaping @Sendable () -> Void) {
        if enqueueWithoutWaking(task) { wake() }
    }

    // MARK: BatchWakeEventLoop

    func enqueueWithoutWaking(_ task: @escaping @Sendable () -> Void) -> Bool {
        if stopped.load(ordering: .relaxed) { return false }
        return tasks.withLock { t -> Bool in
            t.list.append(task)
            if t.woken { return false }
            t.woken = true
            return true
        }
    }

    func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    var wakeGroup: ObjectIdentifier? { bell.map { ObjectIdentifier($0) } }

    func wakeAll() {
        guard let bell else { return wake() }
        bell.ring()
    }

    func scheduleTask<T>(deadline: NIODeadline, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        let promise: EventLoopPromise<T> = makePromise()
        let timer = EpollTimer(deadline: deadline) { promise.assumeIsolatedUnsafeUnchecked().completeWith(Result { try task() }) }
        if inEventLoop {
            add(timer)
        } else {
            execute { [self] in add(timer) }
        }
        return Scheduled(promise: promise) { [self] in
            if inEventLoop {
                cancel(timer, promise)
            } else {
                execute { [self] in cancel(timer, promise) }
            }
        }
    }

    func scheduleTask<T>(in delay: TimeAmount, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        scheduleTask(deadline: .now() + delay, task)
    }

    /// The loop's thread ends once it has run the tasks it was given before this, closing the
    /// connections still on it; tasks given after it are dropped.
    func shutdownGracefully(queue: DispatchQueue, _ callback: @escaping @Sendable (Error?) -> Void) {
        execute { [self] in stopped.store(true, ordering: .relaxed) }
        running.notify(queue: queue) { callback(nil) }
    }

    private func add(_ timer: EpollTimer) {
        timerCount += 1
        timer.order = timerCount
        timers.insert(timer)
    }

    private func cancel<T>(_ timer: EpollTimer, _ promise: EventLoopPromise<T>) {
        guard timer.task != nil else { return }
        timer.task = nil
        promise.fail(EventLoopError.cancelled)
    }

    // MARK: descriptors

    /// Serves `connection` on this loop (on this loop's thread).
    func register(_ connection: EpollConnection) {
        let fd = Int(connection.fd)
        if fd >= connections.count {
            connections.append(contentsOf: repeatElement(nil, count: Swift.max(fd + 1, 2 * connections.count, 1024) - connections.count))
        }
        connections[fd] = connection
        connectionCount += 1
        watch(connection.fd, events: EpollConnection.reading)
    }

    /// Stops serving `connection` (its descriptor is closed or handed over by the caller).
    func unregister(_ connection: EpollConnection) {
        let fd = Int(connection.fd)
        guard fd < connections.count, connections[fd] === connection else { return }
        epoll_ctl(epoll, EPOLL_CTL_DEL, connection.fd, nil)
        connections[fd] = nil
        connectionCount -= 1
    }

    /// Every connection on this loop.
    func eachConnection(_ body: (EpollConnection) -> Void) {
        for case let connection? in connections { body(connection) }
    }

    /// Watches a listening socket: `accept` runs when it is readable. Nil stops watching it.
    func listen(_ listener: (fd: Int32, accept: () -> Void)?) {
        if let old = onListener { epoll_ctl(epoll, EPOLL_CTL_DEL, old.fd, nil) }
        onListener = listener
        if let listener { watch(listener.fd, events: EPOLLIN.rawValue) }
    }

    func watch(_ fd: Int32, events: UInt32) {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event)
    }

    func change(_ fd: Int32, events: UInt32) {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event)
    }

    /// One `recv` of `fd`, through the loop's scratch buffer (a socket's own call, not `read`,
    /// which goes through the file layer first).
    func read(_ fd: Int32) -> EpollRead {
        let n = scratch.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { return .bytes(scratch.withUnsafeBytes { ByteBuffer(bytes: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }) }
        if n == 0 { return .end }
        return errno == EAGAIN || errno == EINTR ? .nothing : .failed
    }

    // MARK: the loop

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 512)
        while !stopped.load(ordering: .relaxed) {
            let n = epoll_wait(epoll, &events, Int32(events.count), nextTimeout())
            for k in 0..<Swift.max(0, Int(n)) {
                let fd = events[k].data.fd
                let flags = events[k].events
                if fd == wakeFD {
                    runTasks()
                } else if let bell, fd == bell.fd {
                    runTasks(readingWake: false)
                } else if let listener = onListener, fd == listener.fd {
                    listener.accept()
                } else if Int(fd) < connections.count, let connection = connections[Int(fd)] {
                    connection.ready(flags)
                }
            }
            runTimers()
        }
        for case let connection? in connections { connection.closeNow() }
        Glibc.close(epoll)
        Glibc.close(wakeFD)
        running.leave()
    }

    /// Milliseconds to the earliest timer (rounded up), or -1 for none.
    private func nextTimeout() -> Int32 {
        guard let first = timers.min else { return -1 }
        let ns = (first.deadline - .now()).nanoseconds
        return ns <= 0 ? 0 : Int32(Swift.min(Int64(Int32.max), (ns + 999_999) / 1_000_000))
    }

    private func runTimers() {
        guard var first = timers.min else { return }
        let now = NIODeadline.now()
        while first.deadline <= now {
            timers.removeMin()
            if let task = first.task {
                first.task = nil
                task()
            }
            guard let next = timers.min else { return }
            first = next
        }
    }

    /// Runs the tasks given so far. Woken by the bell, the loop's own `eventfd` is left as it
    /// is: if it was written as well, it wakes the loop once more, to no tasks.
    private func runTasks(readingWake: Bool = true) {
        var count: UInt64 = 0
        if readingWake { _ = Glibc.read(wakeFD, &count, 8) }
        let list = tasks.withLock { t -> [@Sendable () -> Void] in
            t.woken = false
            var taken: [@Sendable () -> Void] = []
            swap(&taken, &t.list)
            return taken
        }
        for task in list { task() }
    }
}
#endif

#if os(Linux)
// Glibc's module leaves out <sys/epoll.h> and <sys/eventfd.h>: Warren's CWarrenEpoll has them,
// and accept4.
import CWarrenEpoll
import Glibc
import Synchronization

/// One thread's share of the raw server: its own listening socket on the shared port
/// (`SO_REUSEPORT`, so the kernel spreads connections over the workers), its own epoll set,
/// level-triggered: one `read` per readable event, one `write` per answer, nothing else per
/// answer. Everything but `inbox` is touched only on the worker's thread.
final class EpollWorker: @unchecked Sendable {
    private let epoll = epoll_create1(0)
    private let wake = eventfd(0, Int32(EFD_NONBLOCK))
    private let listener: Int32
    private var connections = [EpollConnection?](repeating: nil, count: 1 << 16)
    private var sessions: [EpollConnection] = []
    private var scratch = [UInt8](repeating: 0, count: 4096)
    /// Messages handed over by the AMQP consumer's thread.
    private let inbox = Mutex<[FloorMessage]>([])
    /// CPU to burn per poll answer, standing in for a server's own work (`POLL_FLOOR_WORK_NS`).
    private let workNanos: UInt64

    init(port: UInt16, workNanos: UInt64 = 0) {
        self.workNanos = workNanos
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(listener, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        precondition(bound == 0 && Glibc.listen(listener, 4096) == 0, "cannot listen on 127.0.0.1:\(port): errno \(errno)")
        watch(listener)
        watch(wake)
    }

    /// From the AMQP consumer's thread.
    func post(_ message: FloorMessage) {
        inbox.withLock { $0.append(message) }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    func run() -> Never {
        var events = [epoll_event](repeating: epoll_event(), count: 512)
        while true {
            let n = epoll_wait(epoll, &events, Int32(events.count), -1)
            for k in 0..<max(0, Int(n)) {
                let fd = events[k].data.fd
                if fd == listener {
                    accepting()
                } else if fd == wake {
                    delivering()
                } else if let connection = connections[Int(fd)] {
                    reading(connection)
                }
            }
        }
    }

    private func watch(_ fd: Int32) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
        event.data.fd = fd
        epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event)
    }

    private func accepting() {
        while true {
            let fd = warren_accept4(listener, Int32(SOCK_NONBLOCK.rawValue))
            guard fd >= 0, Int(fd) < connections.count else {
                if fd >= 0 { Glibc.close(fd) }
                return
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            connections[Int(fd)] = EpollConnection(fd: fd)
            watch(fd)
        }
    }

    private func delivering() {
        var count: UInt64 = 0
        _ = read(wake, &count, 8)
        let messages = inbox.withLock { taken in
            defer { taken.removeAll(keepingCapacity: true) }
            return taken
        }
        for message in messages {
            for connection in sessions {
                if connection.parked {
                    connection.parked = false
                    work()
                    send(connection, message.response)
                } else {
                    connection.pending.append(message)
                }
            }
        }
    }

    private func reading(_ connection: EpollConnection) {
        let n = scratch.withUnsafeMutableBytes { read(connection.fd, $0.baseAddress, $0.count) }
        if n < 0, errno == EAGAIN { return }
        guard n > 0 else { return close(connection) }
        connection.buffer.append(contentsOf: scratch[0..<n])
        while connections[Int(connection.fd)] != nil,
              let request = connection.buffer.withUnsafeBytes({ FloorRequest.first($0) }) {
            connection.buffer.removeFirst(request.length)
            answer(connection, request.kind)
        }
    }

    private func answer(_ connection: EpollConnection, _ kind: FloorRequest.Kind) {
        switch kind {
        case .poll:
            guard let last = connection.pending.last else {
                connection.parked = true
                return
            }
            work()
            let items = connection.pending.map(\.item)
            connection.pending.removeAll(keepingCapacity: true)
            send(connection, FloorMessage.answer(items: items, sequence: last.sequence))
        case .create:
            if connection.index < 0 {
                connection.index = sessions.count
                sessions.append(connection)
            }
            send(connection, FloorMessage.created)
        case .ready:
            send(connection, FloorMessage.ready)
        case .other:
            send(connection, FloorMessage.notFound)
        }
    }

    private func work() {
        guard workNanos > 0 else { return }
        var start = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        var now = start
        repeat {
            clock_gettime(CLOCK_MONOTONIC, &now)
        } while UInt64((now.tv_sec - start.tv_sec) * 1_000_000_000 + (now.tv_nsec - start.tv_nsec)) < workNanos
    }

    /// Answers are a few hundred bytes on loopback: written whole, or the connection is dropped.
    private func send(_ connection: EpollConnection, _ bytes: [UInt8]) {
        let written = bytes.withUnsafeBytes { write(connection.fd, $0.baseAddress, $0.count) }
        if written != bytes.count { close(connection) }
    }

    private func close(_ connection: EpollConnection) {
        if connection.index >= 0 {
            let last = sessions.removeLast()
            if last !== connection {
                sessions[connection.index] = last
                last.index = connection.index
            }
            connection.index = -1
        }
        connections[Int(connection.fd)] = nil
        Glibc.close(connection.fd)
    }
}
#endif

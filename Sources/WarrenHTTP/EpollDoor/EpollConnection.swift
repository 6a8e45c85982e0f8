import CNIOLinux
import Glibc
import NIOCore

/// A connection accepted by the ``EpollDoor``: its socket, served on one ``EpollLoop`` with
/// `read` and `write`, as the I/O of a ``PollConnection`` (which parses and answers its
/// requests as on a NIO channel). A connection that turns out not to be a poller's (a
/// WebSocket, the router's endpoints) is handed to NIO whole (``handOn(_:)``). Touched on its
/// loop's thread only.
final class EpollConnection: PollConnectionIO, @unchecked Sendable {
    /// What a connection waits for while it reads.
    static let reading = EPOLLIN.rawValue | EPOLLRDHUP.rawValue

    let fd: Int32
    private let epollLoop: EpollLoop
    private unowned let server: EpollServer
    /// The protocol's state; dropped when the connection closes or is handed on (it holds this).
    private var connection: PollConnection<EpollConnection>?
    /// Written bytes the socket did not take yet.
    private var outbound: ByteBuffer?
    private var isClosed = false
    /// The client closed its side: nothing more is read.
    private var inputEnded = false
    /// Closes the connection if its first request head has not come by then (slowloris).
    private var headTimer: Scheduled<Void>?
    /// The last bytes of a first head not complete yet (``RequestHeadTimeoutHandler/endsHead(tail:_:)``).
    private var headTail: [UInt8]? = []

    init(fd: Int32, loop: EpollLoop, server: EpollServer) {
        self.fd = fd
        self.epollLoop = loop
        self.server = server
    }

    /// Starts serving it (on its loop).
    func start(headTimeout: TimeAmount) {
        connection = PollConnection(server.polls, io: self)
        epollLoop.register(self)
        headTimer = epollLoop.scheduleTask(in: headTimeout) { [self] in
            if headTail != nil { closeNow() }
        }
        connection?.start()
    }

    // MARK: events from the loop

    func ready(_ events: UInt32) {
        if events & EPOLLOUT.rawValue != 0 { flush() }
        guard !isClosed else { return }
        if inputEnded {
            // Level-triggered: a hung-up socket stays ready.
            if events & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { closeNow() }
            return
        }
        if events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { readOnce() }
    }

    private func readOnce() {
        switch epollLoop.read(fd) {
        case .bytes(let bytes):
            if headTail != nil, RequestHeadTimeoutHandler.endsHead(tail: &headTail!, bytes.readableBytesView) {
                headTail = nil
                headTimer?.cancel()
                headTimer = nil
            }
            connection?.read(bytes)
        case .end:
            inputEnded = true
            epollLoop.change(fd, events: outbound == nil ? 0 : EPOLLOUT.rawValue)
            connection?.inputClosed()
        case .nothing:
            break
        case .failed:
            closeNow()
        }
    }

    /// One `send` of `bytes` (not `write`: a socket's own call does not go through the file
    /// layer, `vfs_write` and its checks, first; and `MSG_NOSIGNAL` turns a peer gone into
    /// `EPIPE`, not `SIGPIPE`).
    private func send(_ bytes: UnsafeRawBufferPointer) -> Int {
        Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    }

    /// Writes what the socket would not take before.
    private func flush() {
        guard var rest = outbound, !isClosed else { return }
        let n = rest.withUnsafeReadableBytes { send($0) }
        if n < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            return closeNow()
        }
        rest.moveReaderIndex(forwardBy: n)
        if rest.readableBytes > 0 {
            outbound = rest
            return
        }
        outbound = nil
        epollLoop.change(fd, events: inputEnded ? 0 : Self.reading)
    }

    /// The door shuts down gracefully: closed now, or once the pending answer is written.
    func quiesce() { connection?.quiesce() }

    /// Closes the socket now; the protocol's state learns it (a parked poll is answered with
    /// nothing taken).
    func closeNow() {
        guard !isClosed else { return }
        isClosed = true
        headTimer?.cancel()
        headTimer = nil
        outbound = nil
        epollLoop.unregister(self)
        Glibc.close(fd)
        let connection = self.connection
        self.connection = nil
        connection?.closed()
        // Its sink holds it: dropped (a parked poll's output still holds the sink until answered).
        connection?.detached()
        server.connectionClosed()
    }

    // MARK: PollConnectionIO

    var loop: any EventLoop { epollLoop }

    var isActive: Bool { !isClosed }

    func write(_ bytes: ByteBuffer) {
        guard !isClosed else { return }
        if var rest = outbound {
            var bytes = bytes
            rest.writeBuffer(&bytes)
            outbound = rest
            return
        }
        // Before the send: the client may poll again before this call returns.
        AckDeferral.deferNext(on: fd)
        let n = bytes.withUnsafeReadableBytes { send($0) }
        if n == bytes.readableBytes { return }
        if n < 0, errno != EAGAIN, errno != EINTR { return closeNow() }
        var rest = bytes
        rest.moveReaderIndex(forwardBy: Swift.max(0, n))
        outbound = rest
        epollLoop.change(fd, events: EPOLLOUT.rawValue | (inputEnded ? 0 : Self.reading))
    }

    /// As NIO's channel: what the socket took is sent, what it did not is dropped.
    func close() { closeNow() }

    func handOn(_ bytes: ByteBuffer) {
        guard !isClosed else { return }
        // What the socket did not take yet goes first: written here before the hand-over
        // (a blocking write of at most a response; a client that reads nothing is closed).
        if let rest = outbound, !writeAll(rest) { return closeNow() }
        isClosed = true
        headTimer?.cancel()
        headTimer = nil
        epollLoop.unregister(self)
        let connection = self.connection
        self.connection = nil
        connection?.detached()
        server.handOn(fd, bytes: bytes)
    }

    /// Writes `bytes` whole, waiting up to a second for the socket to take them.
    private func writeAll(_ bytes: ByteBuffer) -> Bool {
        var rest = bytes
        var waits = 0
        while rest.readableBytes > 0 {
            let n = rest.withUnsafeReadableBytes { send($0) }
            if n > 0 {
                rest.moveReaderIndex(forwardBy: n)
                continue
            }
            guard n < 0, errno == EAGAIN || errno == EINTR, waits < 100 else { return false }
            waits += 1
            var pending = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = Glibc.poll(&pending, 1, 10)
        }
        outbound = nil
        return true
    }

    /// The door hands WebSocket handshakes on to NIO, where they are admitted.
    var upgradesWebSockets: Bool { false }

    func upgrade(_ admitted: WebSocketDoor.Admitted, door: WebSocketDoor, forward: ByteBuffer) -> Bool { false }
}

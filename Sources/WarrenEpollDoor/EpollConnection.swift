#if os(Linux)
import CWarrenEpoll
import Glibc
import NIOCore
import WarrenHTTP

/// A connection accepted by the ``EpollDoor``: its socket, served on one ``EpollLoop`` with
/// `recv` and `send`, as the I/O of an ``HTTPConnection`` (whose state machine frames and
/// answers its requests as on a NIO channel). A connection that needs a channel (a WebSocket,
/// the router's endpoints) is handed to NIO whole (``handOn(_:)``), once what it was written
/// has gone out. Touched on its loop's thread only; nothing here waits.
final class EpollConnection: HTTPConnectionIO, @unchecked Sendable {
    /// What a connection waits for while it reads.
    static let reading = EPOLLIN.rawValue | EPOLLRDHUP.rawValue

    let fd: Int32
    private let epollLoop: EpollLoop
    private unowned let server: EpollServer
    /// The protocol's state; dropped when the connection closes or is handed on (it holds this).
    private var connection: HTTPConnection<EpollConnection>?
    /// Written bytes the socket did not take yet.
    private var outbound: ByteBuffer?
    private var isClosed = false
    /// The client closed its side: nothing more is read.
    private var inputEnded = false
    /// The connection stopped reading (its output is backed up, or requests wait).
    private var readingStopped = false
    /// More than `http.max_pending_output` waits in ``outbound``: the connection was told.
    private var backedUp = false
    /// Once ``outbound`` is written: close the output (`shutdown`), or hand the connection on.
    private var afterFlush: AfterFlush?

    private enum AfterFlush {
        case closeOutput
        case handOn(ByteBuffer)
    }

    init(fd: Int32, loop: EpollLoop, server: EpollServer) {
        self.fd = fd
        self.epollLoop = loop
        self.server = server
    }

    /// Starts serving it (on its loop).
    func start() {
        connection = HTTPConnection(server.edge, io: self)
        epollLoop.register(self)
        connection?.start()
    }

    // MARK: events from the loop

    func ready(_ events: UInt32) {
        if events & EPOLLOUT.rawValue != 0 { flush() }
        guard !isClosed else { return }
        if inputEnded || readingStopped {
            // Level-triggered: a hung-up socket stays ready.
            if events & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { closeNow() }
            return
        }
        if events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { readOnce() }
    }

    private func readOnce() {
        switch epollLoop.read(fd) {
        case .bytes(let bytes):
            connection?.read(bytes)
        case .end:
            inputEnded = true
            watch()
            connection?.inputClosed()
        case .nothing:
            break
        case .failed:
            closeNow()
        }
    }

    /// What the socket is watched for: reading while the connection reads, writing while
    /// something waits to go out.
    private func watch() {
        guard !isClosed else { return }
        let read = inputEnded || readingStopped ? 0 : Self.reading
        epollLoop.change(fd, events: read | (outbound == nil ? 0 : EPOLLOUT.rawValue))
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
            if backedUp, rest.readableBytes <= server.maxPendingOutput / 2 { drained() }
            return
        }
        outbound = nil
        watch()
        switch afterFlush {
        case .closeOutput?:
            afterFlush = nil
            shutdown(fd, Int32(SHUT_WR))
        case .handOn(let bytes)?:
            afterFlush = nil
            return handOnNow(bytes)
        case nil:
            break
        }
        if backedUp { drained() }
    }

    private func drained() {
        backedUp = false
        connection?.writabilityChanged(true)
    }

    /// The door shuts down gracefully: closed now, or once the pending answer is written.
    func quiesce() { connection?.quiesce() }

    /// Closes the socket now; the protocol's state learns it (a parked poll is answered with
    /// nothing taken).
    func closeNow() {
        guard !isClosed else { return }
        isClosed = true
        outbound = nil
        afterFlush = nil
        epollLoop.unregister(self)
        Glibc.close(fd)
        let connection = self.connection
        self.connection = nil
        connection?.closed()
        server.connectionClosed()
    }

    // MARK: HTTPConnectionIO

    var loop: any EventLoop { epollLoop }

    var isActive: Bool { !isClosed }

    /// No NIO channel: WebSockets and the router's endpoints are handed on.
    var channel: (any Channel)? { nil }

    func write(_ bytes: ByteBuffer) {
        guard !isClosed else { return }
        if var rest = outbound {
            var bytes = bytes
            rest.writeBuffer(&bytes)
            outbound = rest
            backUpIfOver(rest.readableBytes)
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
        watch()
        backUpIfOver(rest.readableBytes)
    }

    private func backUpIfOver(_ pending: Int) {
        guard !backedUp, pending > server.maxPendingOutput else { return }
        backedUp = true
        connection?.writabilityChanged(false)
    }

    func writeAndCloseOutput(_ bytes: ByteBuffer) {
        write(bytes)
        guard !isClosed else { return }
        if outbound == nil {
            shutdown(fd, Int32(SHUT_WR))
        } else {
            afterFlush = .closeOutput
        }
    }

    /// As NIO's channel: what the socket took is sent, what it did not is dropped.
    func close() { closeNow() }

    func stopReading() {
        readingStopped = true
        watch()
    }

    func resumeReading() {
        readingStopped = false
        watch()
    }

    func handOn(_ bytes: ByteBuffer) {
        guard !isClosed else { return }
        // The connection is NIO's from here; what it was written goes out first, as the
        // socket takes it (EPOLLOUT), never waiting on the loop.
        let connection = self.connection
        self.connection = nil
        connection?.detached()
        if outbound == nil {
            handOnNow(bytes)
        } else {
            afterFlush = .handOn(bytes)
            readingStopped = true
            watch()
        }
    }

    private func handOnNow(_ bytes: ByteBuffer) {
        isClosed = true
        epollLoop.unregister(self)
        server.handOn(fd, bytes: bytes)
    }

    func upgrade(installing install: (ChannelPipeline.SynchronousOperations) throws -> Void, forward: ByteBuffer) -> Bool { false }
}
#endif

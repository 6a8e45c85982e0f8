#if os(Linux)
import CWarrenEpoll
import Glibc
import Logging
import NIOCore
import NIOPosix
import Synchronization
import WarrenHTTP

/// The running ``EpollDoor``: the listening socket, its ``EpollLoop``s, accepting, the
/// connections handed to NIO, and the graceful shutdown.
final class EpollServer: Sendable {
    let edge: EdgeContext
    /// `http.max_pending_output`.
    let maxPendingOutput: Int
    /// The port bound (the configured one, or the one the system chose for port 0).
    let port: Int
    private let listener: Int32
    private let loops: [EpollLoop]
    /// Where connections that are not pollers' are handed, and how their pipeline is set up.
    private let group: any EventLoopGroup
    private let setUpHandedOn: @Sendable (any Channel) throws -> Void
    private let waterMark: ChannelOptions.Types.WriteBufferWaterMark
    private let logger: Logger
    private let state = Mutex(State())
    /// Connections open on the loops.
    private let open = Atomic<Int>(0)
    /// Everything closed after a graceful shutdown, or stopped.
    private let done: AsyncStream<Never>.Continuation
    let finished: AsyncStream<Never>

    private struct State {
        /// The next loop a connection goes to.
        var next = 0
        var paused = false
        /// Accepts that failed since the last that worked (logged when accepting works again).
        var failures = 0
        var shuttingDown = false
        /// The loops were told to stop.
        var finished = false
        var listenerClosed = false
        /// Connections handed to NIO, quiesced with the door's own.
        var handedOn: [ObjectIdentifier: any Channel] = [:]
    }

    /// An accept that fails (out of descriptors or memory) pauses accepting this long, as
    /// NIO's listeners do.
    static let pause = AcceptPause.duration

    init(listener http: HTTPListener, loops count: Int) throws {
        let (host, port, backlog) = (http.host, http.port, http.backlog)
        let address = try SocketAddress.makeAddressResolvingHost(host, port: port)
        let fd = socket(address.protocol.rawValue, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSockAddr { bind(fd, $0, socklen_t($1)) }
        guard bound == 0, Glibc.listen(fd, Int32(backlog)) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw IOError(errnoCode: code, reason: "bind/listen on \(host):\(port)")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.port = withUnsafeBytes(of: &storage) { raw -> Int in
            // sin_port and sin6_port are both at offset 2, in network order.
            Int(UInt16(raw[2]) << 8 | UInt16(raw[3]))
        }
        listener = fd
        let bell = EpollBell()
        loops = (0..<max(1, count)).map { EpollLoop(name: "warren-epoll-\($0)", bell: bell) }
        edge = http.edge
        maxPendingOutput = http.maxPendingOutput
        waterMark = http.waterMark
        group = http.group
        setUpHandedOn = { try http.setUp($0) }
        logger = http.logger
        (finished, done) = AsyncStream<Never>.makeStream()
        let first = loops[0]
        first.execute { [self] in first.listen((listener, { [self] in accept() })) }
    }

    // MARK: accepting

    /// On the first loop: takes every pending connection, each to the next loop in turn.
    private func accept() {
        while true {
            let fd = warren_accept4(listener, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
            if fd < 0 {
                switch errno {
                case EAGAIN, EWOULDBLOCK: return
                case EINTR, ECONNABORTED, EPROTO: continue
                default: return pause(errno)
                }
            }
            let (loop, failures) = state.withLock { s -> (EpollLoop, Int) in
                let loop = loops[s.next]
                s.next = (s.next + 1) % loops.count
                defer { s.failures = 0 }
                return (loop, s.failures)
            }
            if failures > 0 { logger.info("accepting connections again", metadata: ["failedAccepts": "\(failures)"]) }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            open.add(1, ordering: .relaxed)
            let connection = EpollConnection(fd: fd, loop: loop, server: self)
            if loop.inEventLoop {
                connection.start()
            } else {
                loop.execute { connection.start() }
            }
        }
    }

    /// A failed accept: the listening socket stays readable while the connection waits in the
    /// kernel's queue, so it is taken out of the loop's interest set for ``pause`` (a loop that
    /// tried again at once would spin at full CPU until a descriptor came free).
    private func pause(_ code: Int32) {
        let first = state.withLock { s -> Bool in
            s.failures += 1
            return s.failures == 1
        }
        if first {
            logger.warning("cannot accept a connection; pausing accepts \(Self.pause.nanoseconds / 1_000_000) ms at a time until one works",
                           metadata: ["error": "\(IOError(errnoCode: code, reason: "accept"))"])
        }
        let loop = loops[0]
        loop.listen(nil)
        _ = loop.scheduleTask(in: Self.pause) { [self] in
            guard !state.withLock({ $0.shuttingDown }) else { return }
            loop.listen((listener, { [self] in accept() }))
        }
    }

    func connectionClosed() {
        if open.subtract(1, ordering: .relaxed).newValue == 0 { finishIfQuiet() }
    }

    // MARK: handing on

    /// Gives a connection that is not a poller's to NIO, with the bytes read from it and not
    /// taken (`bytes`, from the request the router must answer on), behind the same handlers
    /// as a NIO listener's connection. It counts as open on the door until NIO has it.
    func handOn(_ fd: Int32, bytes: ByteBuffer) {
        let setUp = setUpHandedOn
        ClientBootstrap(group: group)
            .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .channelOption(ChannelOptions.writeBufferWaterMark, value: waterMark)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(HandedOnBytesHandler(bytes))
                    try setUp(channel)
                }
            }
            .withConnectedSocket(fd)
            .whenComplete { [self] result in
                guard case .success(let channel) = result else { return connectionClosed() }
                let key = ObjectIdentifier(channel)
                let quiesce = state.withLock { s -> Bool in
                    s.handedOn[key] = channel
                    return s.shuttingDown
                }
                connectionClosed()
                channel.closeFuture.whenComplete { [self] _ in
                    let empty = state.withLock { s -> Bool in
                        s.handedOn[key] = nil
                        return s.handedOn.isEmpty
                    }
                    if empty { finishIfQuiet() }
                }
                if quiesce { channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
            }
    }

    // MARK: stopping

    /// A graceful shutdown: accepts stop, and every connection closes once no answer is pending
    /// (``finished`` ends when all have).
    func shutdown() {
        let handedOn = state.withLock { s -> [any Channel] in
            s.shuttingDown = true
            return Array(s.handedOn.values)
        }
        closeListener()
        for loop in loops {
            loop.execute { loop.eachConnection { $0.quiesce() } }
        }
        for channel in handedOn { channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
        finishIfQuiet()
    }

    /// Cancelled: accepts stop and every connection on the loops is closed now.
    func stop() {
        let first = state.withLock { s -> Bool in
            defer { (s.shuttingDown, s.finished) = (true, true) }
            return !s.finished
        }
        closeListener()
        guard first else { return }
        for loop in loops { loop.shutdownGracefully { _ in } }
        done.finish()
    }

    private func closeListener() {
        let first = loops[0]
        first.execute { [self] in
            first.listen(nil)
            let close = state.withLock { s -> Bool in
                defer { s.listenerClosed = true }
                return !s.listenerClosed
            }
            if close { Glibc.close(listener) }
        }
    }

    private func finishIfQuiet() {
        let finish = state.withLock { s -> Bool in
            guard s.shuttingDown, !s.finished, s.handedOn.isEmpty, open.load(ordering: .relaxed) == 0 else { return false }
            s.finished = true
            return true
        }
        guard finish else { return }
        for loop in loops { loop.shutdownGracefully { _ in } }
        done.finish()
    }
}
#endif

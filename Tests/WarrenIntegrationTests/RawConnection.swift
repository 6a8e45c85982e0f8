import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A plain TCP connection to Warren that writes what it is told and can close its side, or
/// drop the connection, the way real clients do (a tab killed, a phone off the network), and
/// tells when the server closed it.
final class RawConnection: Sendable {
    let channel: any Channel
    private let received: NIOLockedValueBox<[UInt8]>
    private let ended: EventLoopFuture<Void>

    final class Watch: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let box: NIOLockedValueBox<[UInt8]>
        let ended: EventLoopPromise<Void>
        init(box: NIOLockedValueBox<[UInt8]>, ended: EventLoopPromise<Void>) {
            self.box = box
            self.ended = ended
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let b = unwrapInboundIn(data)
            box.withLockedValue { $0 += b.readableBytesView }
        }
        func channelInactive(context: ChannelHandlerContext) { ended.succeed() }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }

    private init(channel: any Channel, received: NIOLockedValueBox<[UInt8]>, ended: EventLoopFuture<Void>) {
        self.channel = channel
        self.received = received
        self.ended = ended
    }

    static func open(port: Int) async throws -> RawConnection {
        let box = NIOLockedValueBox<[UInt8]>([])
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let ended = loop.makePromise(of: Void.self)
        do {
            let channel = try await ClientBootstrap(group: loop)
                .channelInitializer { $0.pipeline.addHandler(Watch(box: box, ended: ended)) }
                .connect(host: "127.0.0.1", port: port).get()
            return RawConnection(channel: channel, received: box, ended: ended.futureResult)
        } catch {
            ended.succeed()
            throw error
        }
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    /// Closes the sending side only (the client will ask nothing more, and still reads).
    func closeOutput() async throws {
        try await channel.close(mode: .output)
    }

    /// Closes the connection without a word.
    func drop() async {
        try? await channel.close()
        try? await ended.get()
    }

    /// What the server wrote so far.
    var text: String { String(decoding: received.withLockedValue { $0 }, as: UTF8.self) }

    /// Whether what the server wrote contains `needle` within `timeout`.
    func received(_ needle: String, within timeout: Duration) async -> Bool {
        let end = ContinuousClock.now + timeout
        while !text.contains(needle) {
            guard ContinuousClock.now < end else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Whether the server closed the connection within `timeout`.
    func closedByServer(within timeout: Duration) async -> Bool {
        let loop = channel.eventLoop
        let outcome = loop.makePromise(of: Bool.self)
        let decided = NIOLockedValueBox(false)
        @Sendable func decide(_ closed: Bool) {
            if decided.withLockedValue({ d in defer { d = true }; return !d }) { outcome.succeed(closed) }
        }
        ended.whenSuccess { decide(true) }
        let timer = loop.scheduleTask(in: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000)) { decide(false) }
        let closed = (try? await outcome.futureResult.get()) ?? false
        timer.cancel()
        return closed
    }
}

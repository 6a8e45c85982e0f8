import NIOCore
import NIOHTTP1
import NIOPosix

/// Publishes to Nchan over HTTP (`POST /pub/<channel>`, Nchan's own way in), the stamps and
/// pacing of ``BenchPublisher``: unpaced over `window` keep-alive connections each with one
/// request in flight, paced over one connection per 50 messages a second.
public final class NchanPublisher: @unchecked Sendable {
    let port: Int
    let loop: any EventLoop

    public init(port: Int, loop: any EventLoop) {
        self.port = port
        self.loop = loop
    }

    public func run(keys: [String], window: Int, rate: Int?) async throws -> BenchPublisher.Outcome {
        let state = NchanPublishState(keys: keys, promise: loop.makePromise(), rate: rate, loop: loop)
        let connections = rate.map { max(1, $0 / 50) } ?? max(1, min(window, 64))
        var channels: [any Channel] = []
        for _ in 0..<min(connections, max(1, keys.count)) {
            channels.append(try await ClientBootstrap(group: loop)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { ch in
                    ch.eventLoop.makeCompletedFuture {
                        try ch.pipeline.syncOperations.addHTTPClientHandlers()
                        try ch.pipeline.syncOperations.addHandler(NchanPublishHandler(port: self.port, state: state))
                    }
                }
                .connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: port)).get())
        }
        let opened = channels
        loop.execute { state.start(opened) }
        let outcome = try await state.promise.futureResult.get()
        for c in channels { c.close(promise: nil) }
        return outcome
    }
}

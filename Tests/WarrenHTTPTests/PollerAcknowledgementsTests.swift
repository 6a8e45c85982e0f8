#if os(Linux)
import Glibc
import NIOCore
import NIOPosix
import Testing
@testable import WarrenHTTP

@Suite("Poller acknowledgements")
struct PollerAcknowledgementsTests {
    private static let quickAck = ChannelOptions.Types.SocketOption(level: .tcp, name: .init(rawValue: CInt(TCP_QUICKACK)))

    /// A freshly accepted connection acknowledges at once (the kernel's quick-ack mode); after
    /// `delayNext` the next request's acknowledgement waits for the answer (`TCP_QUICKACK` reads 0).
    @Test func aPollersConnectionIsPutInDelayedAcknowledgementMode() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let accepted = group.next().makePromise(of: (any Channel).self)
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                accepted.succeed(channel)
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let client = try await ClientBootstrap(group: group).connect(to: server.localAddress!).get()
        let channel = try await accepted.futureResult.get()
        let (before, after) = try await channel.eventLoop.submit {
            let options = try #require(channel.syncOptions)
            let before = try options.getOption(Self.quickAck)
            PollerAcknowledgements.delayNext(on: channel)
            return (before, try options.getOption(Self.quickAck))
        }.get()
        #expect(before == 1)
        #expect(after == 0)
        try await client.close()
        try await server.close()
        try await group.shutdownGracefully()
    }
}
#endif

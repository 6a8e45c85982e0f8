import AMQPClient
import NIOCore
import NIOPosix
import Testing
@testable import WarrenCore

@Suite("Channel pool placement", .serialized)
struct ChannelPoolPlacementTests {
    /// Two connections, each on an event loop of its own (as Warren runs them on its socket
    /// loops): a consumer asking near a loop always gets a channel whose connection runs on
    /// that loop, round robin over that loop's slots; one asking near no loop takes the slots
    /// in turn.
    @Test func aConsumerAskingNearALoopGetsAChannelOnThatLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        var connections: [AMQPConnection] = []
        for loop in loops {
            connections.append(try await AMQPConnection.connect(configuration: try AMQPConfiguration(urls: [WarrenInstance.brokerURL]),
                                                                eventLoopGroup: loop))
        }
        let pool = ChannelPool(connections: connections, administrationChannels: 1, consumptionChannels: 4)
        for loop in loops {
            var ids: Set<UInt16> = []
            for _ in 0..<6 {
                let channel = try #require(try await pool.consumption(prefetch: 10, near: loop) as? AMQPChannel)
                #expect(channel.eventLoop === loop)
                ids.insert(channel.id)
            }
            #expect(ids.count == 2, "the loop's two slots of four, in turn")
        }
        var placed: [Bool] = []
        for _ in 0..<4 {
            let channel = try #require(try await pool.consumption(prefetch: 20, near: nil) as? AMQPChannel)
            placed.append(channel.eventLoop === loops[0])
        }
        #expect(placed == [false, true, false, true], "slot i on connection (1 + i) % 2")
        for c in connections { await c.close() }
        try await group.shutdownGracefully()
    }
}

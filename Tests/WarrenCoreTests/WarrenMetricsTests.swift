import AMQPClient
import Testing
@testable import WarrenCore

@Suite struct WarrenMetricsTests {
    /// The acceptance time a delivery's latency is measured from rides in the message, where any
    /// AMQP publisher may put any number: none of them may stop the process (a subtraction or a
    /// conversion that overflows traps). Far in the past is the longest latency, in the future none.
    @Test func anyAcceptanceTimeIsRecordedWithoutTrapping() {
        let metrics = WarrenMetrics(classifier: RouteClassifier([]))
        let route = metrics.routeClass("room.x")
        let now: Int64 = 1_763_726_400_000
        for ts in [Int64.min, Int64.min + 1, -10_000_000_000_000, -1, 0, now - 5, now, now + 1, Int64.max] {
            metrics.delivered(route, .ws, count: 1, bytes: 10, acceptedAtMilliseconds: ts, now: now)
        }
        // Nine deliveries counted, their latencies in the histogram: five of them (1970 and
        // before) above every bucket, so the p99 is the top bucket's "more than" (-1).
        let stats = try? JSONParser.parse(metrics.statsJSON())
        let cells = stats?["routes"]?["other"]
        #expect(cells?["messages"]?["ws_out"]?.intValue == 9, "\(String(decoding: metrics.statsJSON(), as: UTF8.self))")
        #expect(cells?["delivery_latency_ms"]?["count"]?.intValue == 9)
        #expect(cells?["delivery_latency_ms"]?["p99"]?.intValue == -1)
        #expect(stats?["version"]?.stringValue == WarrenVersion.string)
    }

    /// A `ts` header that is no time (before 1970 or after 9999) is passed over for the AMQP
    /// timestamp.
    @Test func anAcceptanceTimeHeaderThatIsNoTimeIsPassedOver() {
        for nonsense: Int64 in [Int64.min, -1, 253_402_300_800_000, Int64.max] {
            let p = BasicProperties(headers: ["ts": .int64(nonsense)], timestamp: 1_700_000_000)
            #expect(EnvelopeAMQPMapping.acceptedAt(p) == 1_700_000_000_000, "\(nonsense)")
            #expect(EnvelopeAMQPMapping.acceptedAt(BasicProperties(headers: ["ts": .int64(nonsense)])) == nil)
        }
        #expect(EnvelopeAMQPMapping.acceptedAt(BasicProperties(headers: ["ts": .int64(1_763_726_400_123)])) == 1_763_726_400_123)
    }
}

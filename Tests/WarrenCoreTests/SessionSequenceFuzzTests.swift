import AMQPClient
import Logging
import NIOCore
import Testing
@testable import WarrenCore

/// Whatever a client sends, in whatever order, with the broker delivering in between: every
/// frame is answered or refused with a code, and once the session ends nothing of it is left on
/// the broker — no consumer, no delivery neither acked nor handed back, no live binding.
@Suite struct SessionSequenceFuzzTests {
    static let patterns = ["room.x", "room.#", "#.alice.#", "alice.*", "bob.carol", "a..b", "#"]
    static let routes = ["room.x", "room.y", "alice.bob", "bob.carol", "alice"]

    static func clientFrame(delivered: [String], using rng: inout Lcg) -> String {
        let id = "s\(Int.random(in: 1...4, using: &rng))"
        let pattern = patterns.randomElement(using: &rng)!, route = routes.randomElement(using: &rng)!
        let known = delivered.randomElement(using: &rng) ?? "0196a3f2-7c1e-7b3a-9d2e-000000000000"
        switch Int.random(in: 0..<12, using: &rng) {
        case 0, 1: return #"{"op":"sub","id":"\#(id)","pattern":"\#(pattern)"}"#
        case 2, 3: return #"{"op":"sub","id":"\#(id)","pattern":"\#(pattern)","mode":"inbox"}"#
        case 4: return #"{"op":"sub","id":"\#(id)","pattern":"\#(pattern)","presence":true}"#
        case 5: return #"{"op":"unsub","id":"\#(id)"}"#
        case 6: return #"{"op":"pub","route":"\#(route)","body":"b","cid":"c\#(Int.random(in: 1...3, using: &rng))"}"#
        case 7: return #"{"op":"ack","id":"\#(known)"}"#
        case 8: return #"{"op":"ack","ids":["\#(known)","\#(delivered.randomElement(using: &rng) ?? known)"]}"#
        case 9: return [#"{"op":"history","id":"h","route":"\#(route)"}"#, #"{"op":"conversations","id":"c"}"#,
                        #"{"op":"presence","id":"p","route":"\#(route)"}"#][Int.random(in: 0..<3, using: &rng)]
        case 10: return [#"{"op":"ping"}"#, "{", "[]", #"{"op":"nope"}"#, #"{"op":"sub"}"#][Int.random(in: 0..<5, using: &rng)]
        default: return #"{"op":"read","route":"\#(route)","id":"\#(known)"}"#
        }
    }

    @Test func anySequenceOfFramesLeavesNothingBehind() async throws {
        var rng = Lcg(state: 0x5E55)
        var answered = 0, inboxDeliveries = 0, liveBindings = 0
        for _ in 0..<120 {
            let bridge = try await FakeBridge()
            let out = RecordingOutput()
            let session = ClientSession(runtime: bridge.runtime, user: "alice", device: "d",
                                        rules: AccessPolicy.standard.resolved(for: "alice"), output: out, logger: Logger(label: "test"))
            let inbox = bridge.channels.consuming(prefetch: InboxSettings().prefetch)
            var deliveredIDs: [String] = [], deliveryTags: [UInt64] = []
            for step in 0..<Int.random(in: 1...50, using: &rng) {
                switch Int.random(in: 0..<5, using: &rng) {
                case 0:
                    bridge.live.deliver(to: bridge.liveConsumer, routingKey: Self.routes.randomElement(using: &rng)!, body: "live")
                case 1:
                    for tag in inbox.consumerTags {
                        let id = String(format: "0196a3f2-7c1e-7b3a-9d2e-%012x", deliveredIDs.count + 1)
                        deliveryTags.append(inbox.deliver(to: tag, routingKey: "alice.bob", body: "in \(step)", messageID: id))
                        deliveredIDs.append(id)
                    }
                default:
                    let before = out.frames.count
                    await session.handle(ByteBuffer(string: Self.clientFrame(delivered: deliveredIDs, using: &rng)))
                    if out.frames.count > before { answered += 1 }
                }
            }
            await session.end()
            inboxDeliveries += deliveryTags.count
            #expect(inbox.consumerTags.isEmpty, "an inbox consumer outlived its session")
            let settled = Set(inbox.calls.compactMap { call -> UInt64? in
                let words = call.split(separator: " ")
                guard words.count >= 2, words[0] == "ack" || words[0] == "nack" else { return nil }
                return UInt64(words[1].trimmingCharacters(in: ["+"]))
            })
            #expect(Set(deliveryTags).isSubset(of: settled), "deliveries neither acked nor handed back: \(Set(deliveryTags).subtracting(settled))")
            var bound: [Substring: Int] = [:]
            for call in bridge.binds.calls {
                let words = call.split(separator: " ")
                guard words.count == 3 else { continue }
                if words[0] == "bind" { bound[words[2], default: 0] += 1; liveBindings += 1 }
                if words[0] == "unbind" { bound[words[2], default: 0] -= 1 }
            }
            #expect(bound.values.allSatisfy { $0 == 0 }, "live bindings left: \(bound.filter { $0.value != 0 }) after \(bridge.binds.calls)")
            #expect(out.closed == nil || out.closed == 1008)
        }
        #expect(answered > 1_000 && inboxDeliveries > 100 && liveBindings > 50,
                "\(answered) answered, \(inboxDeliveries) inbox deliveries, \(liveBindings) live bindings")
    }
}

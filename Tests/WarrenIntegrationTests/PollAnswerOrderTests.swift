import Foundation
import Testing
@testable import WarrenClient

/// The Swift client's drain hands a left session's answers on in the order Warren made them
/// (no broker: the answers are decoded from Warren's JSON).
@Suite("Swift client: a drained session's answers in order")
struct PollAnswerOrderTests {
    static func answer(_ cursor: String?, _ bodies: [String]) throws -> Wire.PollAnswer {
        let items = bodies.map { body in
            #"{"sub":"s","env":{"v":1,"id":"\#(body)","route":"room.r","type":"text","from":"u","via":"ws","ts":1,"body":"\#(body)"}}"#
        }
        let cursorJSON = cursor.map { #","cursor":"\#($0)""# } ?? ""
        return try JSONDecoder().decode(Wire.PollAnswer.self, from: Data(#"{"messages":[\#(items.joined(separator: ","))]\#(cursorJSON)}"#.utf8))
    }

    static func bodies(_ answers: [Wire.PollAnswer]) -> [String] {
        answers.flatMap(\.messages).map { $0.env.body.stringValue ?? "" }
    }

    /// The long-poll in flight reached Warren after the drain's first poll: its answer (made
    /// later, number 12) holds the later message, and comes after the drain's (number 11).
    @Test func theLongPollInFlightMadeAfterTheDrainsPollComesAfterIt() throws {
        let inFlight = try Self.answer("node-a.12", ["m30"])
        let drain = try Self.answer("node-a.11", ["m28", "m29"])
        let more = try Self.answer("node-a.13", ["m31"])
        #expect(Self.bodies(Wire.PollAnswer.inOrderMade([inFlight, drain, more])) == ["m28", "m29", "m30", "m31"])
    }

    @Test func answersAlreadyInOrderStayInOrder() throws {
        let answers = try [Self.answer("n.9", ["a"]), Self.answer("n.10", ["b"]), Self.answer("n.100", ["c"])]
        #expect(Self.bodies(Wire.PollAnswer.inOrderMade(answers)) == ["a", "b", "c"], "compared as numbers, not as text")
    }

    /// Cursors of two nodes, or of a form that is not Warren's, say nothing of the order: as given.
    @Test func cursorsThatSayNothingOfTheOrderLeaveItAsGiven() throws {
        let twoNodes = try [Self.answer("b.2", ["x"]), Self.answer("a.1", ["y"])]
        #expect(Self.bodies(Wire.PollAnswer.inOrderMade(twoNodes)) == ["x", "y"])
        let opaque = try [Self.answer("zz", ["x"]), Self.answer("a.1", ["y"])]
        #expect(Self.bodies(Wire.PollAnswer.inOrderMade(opaque)) == ["x", "y"])
        let none = try [Self.answer("a.2", ["x"]), Self.answer(nil, ["y"])]
        #expect(Self.bodies(Wire.PollAnswer.inOrderMade(none)) == ["x", "y"])
    }
}

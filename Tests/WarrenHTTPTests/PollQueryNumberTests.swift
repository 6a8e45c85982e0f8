import Testing
import WarrenCore
@testable import WarrenHTTP

/// `wait` and `max` on a poll (docs/protocol.md): above the configured limit is clamped, negative or
/// not a number is a 400.
@Suite("A poll's wait and max")
struct PollQueryNumberTests {
    @Test(arguments: [("25", 25), ("0", 0), ("007", 7), ("99999999999999999999", Int.max)])
    func takesANumber(_ raw: String, _ value: Int) throws {
        #expect(try PollRoutes.nonNegative(raw, name: "wait", default: 3).get() == value)
    }

    @Test(arguments: ["-1", "", "soon", "1e3", " 1", "0x1", "1.5", "１"])
    func refusesAnythingElse(_ raw: String) {
        #expect(throws: ProtocolError.self) { try PollRoutes.nonNegative(raw, name: "wait", default: 3).get() }
    }

    @Test func absentIsTheDefault() throws {
        #expect(try PollRoutes.nonNegative(nil, name: "max", default: 1000).get() == 1000)
    }
}

import Testing
@testable import WarrenCore

@Suite("A session string as the key of the sessions open on a node")
struct PollSessionKeyTests {
    /// Two strings that end alike (a forged claims part before a copied signature).
    let signature = String(repeating: "s", count: 43)

    @Test func equalStringsAreOneKeyAndStringsEndingAlikeAreTwo() {
        let a = "header.claims-of-alice." + signature
        let forged = "header.claims-of-mallory." + signature
        #expect(PollSessionKey(a) == PollSessionKey(String(decoding: Array(a.utf8), as: UTF8.self)))
        #expect(PollSessionKey(a).hashValue == PollSessionKey(String(decoding: Array(a.utf8), as: UTF8.self)).hashValue)
        #expect(PollSessionKey(a) != PollSessionKey(forged))

        var open: [PollSessionKey: Int] = [:]
        open[a] = 1
        #expect(open[forged] == nil)
        open[forged] = 2
        #expect(open.count == 2)
        #expect(open[a] == 1 && open[forged] == 2)
        open[a] = nil
        #expect(open[forged] == 2 && open.count == 1)
    }

    @Test func aSliceOfARequestTargetFindsItsSession() {
        let token = "header.claims-of-alice." + signature
        var open: [PollSessionKey: Int] = [:]
        open[token] = 1
        let target = "/v1/poll/" + token + "?user=alice&wait=30"
        let start = target.utf8.index(target.utf8.startIndex, offsetBy: 9)
        let end = target.utf8.firstIndex(of: UInt8(ascii: "?"))!
        let slice = Substring(target.utf8[start..<end])
        #expect(open[slice] == 1)
        #expect(PollSessionKey(slice).hashValue == PollSessionKey(token).hashValue)
        // One byte short, or one more, is another key.
        #expect(open[slice.dropLast()] == nil)
        #expect(open[Substring(target.utf8[start...end])] == nil)
    }

    @Test func stringsShorterThanTheHashedSuffixAreKeysToo() {
        var open: [PollSessionKey: Int] = [:]
        for (n, token) in ["", "x", "xy"].enumerated() { open[token] = n }
        #expect(open[""] == 0 && open["x"] == 1 && open["xy"] == 2 && open["y"] == nil)
        open["x"] = nil
        #expect(open.count == 2)
    }
}

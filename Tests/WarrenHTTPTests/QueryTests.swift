import Testing
@testable import WarrenHTTP

@Suite("Query strings")
struct QueryTests {
    @Test func readsItemsFirstWinsAndDecodes() {
        let q = Query(target: "/v1/poll/s3ss10n.abc?wait=25&&max=&flag&user=al%69ce&wait=3&msg=a+b%2Bc")
        #expect(q.items["wait"] == "25")
        #expect(q.items["max"] == "")
        #expect(q.items["flag"] == "")
        #expect(q.items["user"] == "alice")
        #expect(q.items["msg"] == "a b+c")
        #expect(q.items.count == 6, "every item is kept; the first of a name is the one read")
        #expect(q.items.all("wait") == ["25", "3"])
    }

    @Test func noQueryNoItems() {
        #expect(Query(target: "/v1/poll/abc").items.isEmpty)
        #expect(Query(target: "/v1/poll/abc?").items.isEmpty)
    }

    @Test func keepsAtMostLimitNames() {
        let target = "/v1/poll/abc?" + (0..<5000).map { "n\($0)=v" }.joined(separator: "&")
        let q = Query(target: target)
        #expect(q.items.count == Query.Items.limit)
        #expect(q.items["n0"] == "v")
        #expect(q.items["n4999"] == nil)
    }

    @Test func integersPastTheRangeAreClampedAndAnythingElseIsNone() {
        #expect(Query.integer("25") == 25)
        #expect(Query.integer("-3") == -3)
        #expect(Query.integer("99999999999999999999") == Int.max)
        #expect(Query.integer("-99999999999999999999") == Int.min)
        for raw in ["", "-", "+", "1e3", "0x1", " 1", "1.5", "abc", "１"] { #expect(Query.integer(raw) == nil, "\(raw)") }
    }
}

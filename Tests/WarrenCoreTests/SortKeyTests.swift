import Testing
@testable import WarrenCore

@Suite("Where a kept message stands in history")
struct SortKeyTests {
    let now: Int64 = 1_763_726_400_123

    @Test func aWarrenIdIsPlacedAtItsOwnTimeSoKeysSortAsIdsDo() {
        let ids = UUIDv7Generator()
        let a = ids.next(nowMilliseconds: UInt64(now - 5)), b = ids.next(nowMilliseconds: UInt64(now - 5)), c = ids.next(nowMilliseconds: UInt64(now))
        #expect(SortKey.time(of: a, now: now) == now - 5)
        let keys = [a, b, c].map { SortKey.of(id: $0, storedAt: now + 1_000) }
        #expect(keys == keys.sorted() && a < b && b < c)
        #expect(keys[2] == SortKey.prefix(now) + c && SortKey.id(of: keys[2]) == c)
        #expect(SortKey.placing(id: c, now: now) == keys[2], "an id that places itself needs no lookup")
        #expect(keys[2].utf8.count == 48)
    }

    @Test func anIdOfAnotherKindOrFromAClockFarAheadIsPlacedWhenStored() {
        let random = "f47ac10b-58cc-4372-a567-0e02b2c3d479"
        #expect(SortKey.time(of: random, now: now) == nil)
        #expect(SortKey.of(id: random, storedAt: now) == SortKey.prefix(now) + random)
        #expect(SortKey.placing(id: random, now: now) == nil)

        let ids = UUIDv7Generator()
        let slightlyAhead = ids.next(nowMilliseconds: UInt64(now + SortKey.tolerance))
        #expect(SortKey.time(of: slightlyAhead, now: now) == now + SortKey.tolerance, "another node's clock a little ahead")
        let farAhead = ids.next(nowMilliseconds: UInt64(now + SortKey.tolerance + 1))
        #expect(SortKey.of(id: farAhead, storedAt: now) == SortKey.prefix(now) + farAhead)
        #expect(SortKey.placing(id: farAhead, now: now) == nil)
        #expect(SortKey.of(id: farAhead, storedAt: now) < SortKey.of(id: ids.next(nowMilliseconds: UInt64(now + 1)), storedAt: now + 1))
    }

    @Test func thePrefixIsTwelveHexDigitsClampedToWhatTheyHold() {
        #expect(SortKey.prefix(0) == "000000000000")
        #expect(SortKey.prefix(-7) == "000000000000")
        #expect(SortKey.prefix(0x19a_a3f2_7c1e) == "019aa3f27c1e")
        #expect(SortKey.prefix(.max) == "ffffffffffff")
    }
}

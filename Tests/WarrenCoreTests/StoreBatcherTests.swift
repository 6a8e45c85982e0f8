import Testing
@testable import WarrenCore

@Suite("Store batcher")
struct StoreBatcherTests {
    @Test func writesAtOnceWhenIdleAndBatchesWhatArrivesMeanwhile() {
        var b = StoreBatcher<Int>(maxBatch: 3)
        #expect(b.received(1) == [1], "an idle writer writes the first message at once, no timer")
        for n in 2...6 { #expect(b.received(n) == nil, "one batch at a time") }
        #expect(b.written() == [2, 3, 4], "the next batch is what came meanwhile, up to the maximum")
        #expect(b.written() == [5, 6])
        #expect(b.written() == nil)
        #expect(b.phase == .idle)
        #expect(b.received(7) == [7])
    }

    @Test func aFailedBatchIsKeptAheadAndRetriedOnlyAfterTheBackOff() {
        var b = StoreBatcher<Int>(maxBatch: 2)
        let first = b.received(1)
        _ = b.received(2)
        _ = b.received(3)
        b.failed(first ?? [])
        #expect(b.phase == .backingOff)
        #expect(b.received(4) == nil, "nothing starts while backing off")
        #expect(b.waiting == [1, 2, 3, 4], "the failed batch stays ahead of what came after")
    }

    @Test func retryResumesInOrder() {
        var b = StoreBatcher<Int>(maxBatch: 2)
        let first = b.received(1) ?? []
        _ = b.received(2)
        b.failed(first)
        #expect(b.received(3) == nil)
        #expect(b.retry() == [1, 2], "the failed message first, in arrival order")
        #expect(b.retry() == nil, "no second batch while one is written")
        #expect(b.written() == [3])
        #expect(b.written() == nil)
    }

    @Test func aRefusedBatchIsWrittenAgainOneMessageAtATime() {
        var b = StoreBatcher<Int>(maxBatch: 3)
        let first = b.received(1) ?? []
        for n in 2...5 { _ = b.received(n) }
        let batch = b.written() ?? []
        #expect(first == [1] && batch == [2, 3, 4])
        #expect(b.refused(batch) == [2], "the refused batch again, first message alone")
        #expect(b.written() == [3])
        #expect(b.refused([3]) == [4], "a message refused alone is given up; the next goes on alone")
        #expect(b.written() == [5], "past the refused batch, batches grow again")
        _ = b.received(6)
        _ = b.received(7)
        #expect(b.written() == [6, 7])
        #expect(b.singles == 0)
    }
}

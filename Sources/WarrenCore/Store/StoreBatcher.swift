/// What the store writer does next, as a pure state machine (no I/O, no clock): messages come
/// in one by one from the broker; one batch is written at a time; whatever arrives meanwhile
/// forms the next batch (up to `maxBatch`), so batches grow with the load and a message never
/// waits for a timer. A failed batch goes back in front and waits for ``retry()``; a batch the
/// database refused for what a message holds goes back in front to be written one message at a
/// time (``refused(_:)``).
public struct StoreBatcher<Item> {
    public enum Phase: Sendable, Equatable {
        case idle
        case writing
        /// A write failed; nothing starts until ``retry()``.
        case backingOff
    }

    public let maxBatch: Int
    public private(set) var waiting: [Item] = []
    public private(set) var phase = Phase.idle
    /// How many of the next batches are single messages: those of a refused batch.
    public private(set) var singles = 0

    public init(maxBatch: Int) { self.maxBatch = max(1, maxBatch) }

    /// A message arrived: the batch to write now, if the writer was idle.
    public mutating func received(_ item: Item) -> [Item]? {
        waiting.append(item)
        return startIfIdle()
    }

    /// The batch in flight was committed: the next batch, if any waits.
    public mutating func written() -> [Item]? {
        phase = .idle
        singles = max(0, singles - 1)
        return startIfIdle()
    }

    /// The database refused the batch in flight for what one of its messages holds: a batch of
    /// several goes back in front, to be written one message at a time (the others are kept);
    /// a single message is given up (the caller acks it, unkept). The next batch, if any waits.
    public mutating func refused(_ batch: [Item]) -> [Item]? {
        phase = .idle
        if batch.count > 1 {
            waiting.insert(contentsOf: batch, at: 0)
            singles = batch.count
        } else {
            singles = max(0, singles - 1)
        }
        return startIfIdle()
    }

    /// The batch in flight failed: it is kept, ahead of everything else, until ``retry()``.
    public mutating func failed(_ batch: [Item]) {
        phase = .backingOff
        waiting.insert(contentsOf: batch, at: 0)
    }

    /// After the back-off: the batch to try again.
    public mutating func retry() -> [Item]? {
        guard phase == .backingOff else { return nil }
        phase = .idle
        return startIfIdle()
    }

    private mutating func startIfIdle() -> [Item]? {
        guard phase == .idle, !waiting.isEmpty else { return nil }
        let n = singles > 0 ? 1 : min(maxBatch, waiting.count)
        let batch = Array(waiting.prefix(n))
        waiting.removeFirst(n)
        phase = .writing
        return batch
    }
}

extension StoreBatcher: Sendable where Item: Sendable {}

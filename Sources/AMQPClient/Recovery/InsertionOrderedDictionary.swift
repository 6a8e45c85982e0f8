/// A dictionary that remembers the order its keys were first inserted in, with O(1) insert,
/// lookup and removal; the order is worked out only when asked for (at a recovery).
///
/// ``RecordedTopology`` kept its records in arrays searched and compacted on every change: a
/// node recording thousands of bindings or consumers paid for all of them on each new one.
struct InsertionOrderedDictionary<Key: Hashable, Value> {
    private var entries: [Key: (order: UInt64, value: Value)] = [:]
    private var next: UInt64 = 0

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// Setting a key already present keeps its place; nil removes it.
    subscript(key: Key) -> Value? {
        get { entries[key]?.value }
        set {
            guard let newValue else {
                entries[key] = nil
                return
            }
            if let i = entries.index(forKey: key) {
                entries.values[i].value = newValue
            } else {
                entries[key] = (next, newValue)
                next += 1
            }
        }
    }

    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? { entries.removeValue(forKey: key)?.value }

    mutating func removeAll(where shouldRemove: (Key, Value) -> Bool) {
        entries = entries.filter { !shouldRemove($0.key, $0.value.value) }
    }

    /// Renames `old` to `new` in place (its value and its place kept); nothing when `old` is absent.
    mutating func rename(_ old: Key, to new: Key) {
        guard old != new, let entry = entries.removeValue(forKey: old) else { return }
        entries[new] = entry
    }

    /// Changes values in place; the keys and their order stay.
    mutating func updateValues(_ body: (Key, inout Value) -> Void) {
        for i in entries.indices { body(entries.keys[i], &entries.values[i].value) }
    }

    /// Keys and values in the order the keys were first inserted.
    var ordered: [(key: Key, value: Value)] {
        entries.sorted { $0.value.order < $1.value.order }.map { ($0.key, $0.value.value) }
    }
}

extension InsertionOrderedDictionary: Sendable where Key: Sendable, Value: Sendable {}

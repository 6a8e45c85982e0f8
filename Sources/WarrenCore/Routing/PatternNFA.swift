/// A pattern as a small non-deterministic automaton over words.
///
/// State `i` means "the first `i` pattern words are matched". Before a `#`
/// the state may move on without input (the `#` matched zero words) or stay
/// while consuming a word. Used for route classes and containment, where
/// patterns are few; per-message fan-out uses ``TopicTrie``.
struct PatternNFA {
    let words: [TopicPattern.Word]

    init(_ pattern: TopicPattern) { self.words = pattern.words }

    var stateCount: Int { words.count + 1 }
    var accepting: Int { words.count }

    /// Adds the states reachable without input (skipping `#`s).
    func closure(_ states: inout Set<Int>) {
        var stack = Array(states)
        while let s = stack.popLast() {
            if s < words.count, case .hash = words[s], states.insert(s + 1).inserted {
                stack.append(s + 1)
            }
        }
    }

    /// One step on a word; `nil` word means "a word equal to no literal".
    func step(_ states: Set<Int>, _ word: Substring?) -> Set<Int> {
        var next = Set<Int>()
        for s in states where s < words.count {
            switch words[s] {
            case .hash: next.insert(s)
            case .star: next.insert(s + 1)
            case .literal(let l): if let word, l == word { next.insert(s + 1) }
            }
        }
        closure(&next)
        return next
    }

    var start: Set<Int> {
        var s: Set<Int> = [0]
        closure(&s)
        return s
    }

    func accepts(_ key: [Substring]) -> Bool {
        var states = start
        for w in key {
            states = step(states, w)
            if states.isEmpty { return false }
        }
        return states.contains(accepting)
    }
}

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

/// Pattern containment: is every key matched by P also matched by A?
///
/// Searches for a key in P's language but not A's over the alphabet of the
/// literals of both patterns plus one "fresh" word that equals none of them
/// (no pattern can tell two fresh words apart, so one stands for all). The
/// search walks pairs (P's state set, A's state set) reached by non-empty keys; a
/// pair where P accepts and A does not is a counterexample. Patterns have at most 17 states, so this is small.
enum PatternContainment {
    static func isContained(_ p: TopicPattern, in a: TopicPattern) -> Bool {
        let pn = PatternNFA(p)
        let an = PatternNFA(a)
        var alphabet: [Substring?] = [nil]
        var seen = Set<Substring>()
        for case .literal(let l) in p.words + a.words where seen.insert(l).inserted { alphabet.append(l) }

        struct Pair: Hashable {
            var p: Set<Int>
            var a: Set<Int>
        }
        // Routing keys have at least one word, so the start pair (the empty key) is not checked.
        var visited: Set<Pair> = []
        var queue = [Pair(p: pn.start, a: an.start)]
        while let pair = queue.popLast() {
            for symbol in alphabet {
                let np = pn.step(pair.p, symbol)
                guard !np.isEmpty else { continue }
                let next = Pair(p: np, a: an.step(pair.a, symbol))
                guard visited.insert(next).inserted else { continue }
                if next.p.contains(pn.accepting), !next.a.contains(an.accepting) { return false }
                queue.append(next)
            }
        }
        return true
    }
}

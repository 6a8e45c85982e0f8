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

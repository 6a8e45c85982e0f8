import Testing
@testable import WarrenCore

/// An independent, obviously-correct matcher: the oracle.
func oracleMatch(_ p: ArraySlice<String>, _ k: ArraySlice<String>) -> Bool {
    guard let first = p.first else { return k.isEmpty }
    switch first {
    case "#": return (0...k.count).contains { oracleMatch(p.dropFirst(), k.dropFirst($0)) }
    case "*": return !k.isEmpty && oracleMatch(p.dropFirst(), k.dropFirst())
    default: return k.first == first && oracleMatch(p.dropFirst(), k.dropFirst())
    }
}

struct Lcg: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state
    }
}

func randomWords(_ alphabet: [String], maxCount: Int, using rng: inout Lcg) -> [String] {
    (0..<Int.random(in: 1...maxCount, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
}

@Suite struct RouteValidationTests {
    @Test(arguments: ["alice.bob", "room.lobby", "group.g-1_x", "a", String(repeating: "a", count: 64)])
    func validRoutes(_ s: String) throws { _ = try RouteKey(s) }

    @Test(arguments: ["", "alice..bob", ".a", "a.", "a.#", "a.*", "a b", "ä", "a/b", String(repeating: "a", count: 65),
                      Array(repeating: "a", count: 17).joined(separator: "."),
                      Array(repeating: String(repeating: "a", count: 60), count: 5).joined(separator: ".")])
    func invalidRoutes(_ s: String) { #expect(throws: RouteError.self) { try RouteKey(s) } }

    @Test func patternsAllowWildcardsAsWholeWords() throws {
        _ = try TopicPattern("#.alice.#")
        _ = try TopicPattern("*.b.*")
        _ = try TopicPattern("#")
        #expect(throws: RouteError.self) { try TopicPattern("a#") }
        #expect(throws: RouteError.self) { try TopicPattern("a.**") }
        #expect(throws: RouteError.self) { try TopicPattern("") }
    }

    @Test func errorsSayWhy() {
        #expect(throws: RouteError.wildcardInRoute) { try RouteKey("a.#") }
        #expect(throws: RouteError.tooLong(bytes: 300)) { try RouteKey(String(repeating: "a.", count: 150).dropLast() + "b") }
    }
}

@Suite struct PatternOracleTests {
    static let alphabet = ["a", "b", "c"]
    static let patternAlphabet = ["a", "b", "*", "#"]

    @Test func matcherAgreesWithOracle() throws {
        var rng = Lcg(state: 42)
        for _ in 0..<3000 {
            let p = randomWords(Self.patternAlphabet, maxCount: 5, using: &rng)
            let k = randomWords(Self.alphabet, maxCount: 6, using: &rng)
            let pattern = try TopicPattern(p.joined(separator: "."))
            let key = try RouteKey(k.joined(separator: "."))
            #expect(pattern.matches(key) == oracleMatch(p[...], k[...]), "\(pattern) vs \(key)")
            #expect(PatternNFA(pattern).accepts(key.words) == oracleMatch(p[...], k[...]), "\(pattern) vs \(key)")
        }
    }

    /// The byte matcher on words of different lengths sharing prefixes, and on the longest
    /// patterns and keys (16 words: 17 states, the top bits of the state word).
    @Test func byteMatcherAgreesWithOracleOnLongWordsAndKeys() throws {
        var rng = Lcg(state: 7)
        let alphabet = ["a", "ab", "ba", "abc", "b-_9"]
        for _ in 0..<3000 {
            let p = randomWords(alphabet + ["*", "#", "#"], maxCount: 16, using: &rng)
            let k = randomWords(alphabet, maxCount: 16, using: &rng)
            let pattern = try TopicPattern(p.joined(separator: "."))
            let key = try RouteKey(k.joined(separator: "."))
            #expect(pattern.matches(key) == oracleMatch(p[...], k[...]), "\(pattern) vs \(key)")
        }
        let sixteen = Array(repeating: "a", count: 16).joined(separator: ".")
        #expect(try TopicPattern(sixteen).matches(try RouteKey(sixteen)))
        #expect(try TopicPattern(Array(repeating: "#", count: 16).joined(separator: ".")).matches(try RouteKey(sixteen)))
        #expect(try TopicPattern(Array(repeating: "*", count: 16).joined(separator: ".")).matches(try RouteKey(sixteen)))
        #expect(!(try TopicPattern(Array(repeating: "*", count: 15).joined(separator: ".")).matches(try RouteKey(sixteen))))
    }

    /// The byte check of a routing key says what ``RouteKey`` says.
    @Test(arguments: ["alice.bob", "a", "room.lobby-1_x", String(repeating: "a", count: 64), "", "alice..bob", ".a", "a.",
                      "a.#", "a.*", "a b", "ä", "a/b", String(repeating: "a", count: 65),
                      Array(repeating: "a", count: 16).joined(separator: "."),
                      Array(repeating: "a", count: 17).joined(separator: "."),
                      Array(repeating: String(repeating: "a", count: 60), count: 5).joined(separator: ".")])
    func byteKeyCheckAgreesWithRouteKey(_ s: String) {
        var bytes = s
        let valid = bytes.withUTF8 { TopicMatcher.isValidKey($0) }
        #expect(valid == ((try? RouteKey(s)) != nil), "\(s)")
    }

    /// Every key up to `maxLength` words over the literals plus a fresh word.
    static func allKeys(maxLength: Int) -> [[String]] {
        let symbols = ["a", "b", "z"]
        var result: [[String]] = []
        var layer: [[String]] = [[]]
        for _ in 1...maxLength {
            layer = layer.flatMap { prefix in symbols.map { prefix + [$0] } }
            result += layer
        }
        return result
    }

    @Test func containmentAgreesWithOracle() throws {
        let keys = Self.allKeys(maxLength: 7)
        var rng = Lcg(state: 7)
        var contained = 0
        for _ in 0..<400 {
            let p = randomWords(Self.patternAlphabet, maxCount: 3, using: &rng)
            let a = randomWords(Self.patternAlphabet, maxCount: 3, using: &rng)
            let oracle = keys.allSatisfy { !oracleMatch(p[...], $0[...]) || oracleMatch(a[...], $0[...]) }
            let (pp, ap) = (try TopicPattern(p.joined(separator: ".")), try TopicPattern(a.joined(separator: ".")))
            #expect(pp.isContained(in: ap) == oracle, "\(pp) in \(ap)")
            // The automata alone too (isContained answers some cases without them).
            #expect(PatternContainment.isContained(pp, in: ap) == oracle, "automata: \(pp) in \(ap)")
            if oracle { contained += 1 }
        }
        #expect(contained > 40, "the random cases include enough positives")
    }

    @Test(arguments: [
        ("alice.#", "#.alice.#", true), ("#", "#.alice.#", false), ("#", "#", true), ("#.alice.#", "#.alice.#", true),
        ("*.#", "#.*", true), ("#.*", "*.#", true), ("alice.bob", "#.bob.#", true), ("room.lobby", "room.#", true),
        ("room.#", "room.*", false), ("*", "#", true), ("#", "*.#", true), ("#", "*.*.#", false), ("a.*.c", "a.#", true), ("#.#", "#", true),
    ])
    func knownContainments(p: String, a: String, expected: Bool) throws {
        #expect(try TopicPattern(p).isContained(in: TopicPattern(a)) == expected)
    }
}

@Suite struct TopicTrieTests {
    @Test func trieAgreesWithOracleOnRandomSubscriptions() throws {
        var rng = Lcg(state: 99)
        let trie = TopicTrie<Int>()
        var subs: [(pattern: [String], id: Int)] = []
        for id in 0..<300 {
            let p = randomWords(PatternOracleTests.patternAlphabet + ["c"], maxCount: 5, using: &rng)
            subs.append((p, id))
            trie.insert(try TopicPattern(p.joined(separator: ".")), id)
        }
        // Remove a third of them again, exercising pruning.
        for (p, id) in subs where id % 3 == 0 { trie.remove(try TopicPattern(p.joined(separator: ".")), id) }
        let live = subs.filter { $0.id % 3 != 0 }
        for _ in 0..<2000 {
            let k = randomWords(PatternOracleTests.alphabet, maxCount: 7, using: &rng)
            let expected = Set(live.filter { oracleMatch($0.pattern[...], k[...]) }.map(\.id))
            #expect(trie.match(try RouteKey(k.joined(separator: "."))) == expected, "\(k)")
        }
    }

    @Test func eachPatternReportedOnceEvenWithManyPaths() throws {
        let trie = TopicTrie<String>()
        trie.insert(try TopicPattern("#.#"), "s1")
        trie.insert(try TopicPattern("#.a.#"), "s2")
        var reports: [String] = []
        trie.forEachMatch(try RouteKey("a.a.a.a")) { pattern, _ in reports.append(pattern) }
        #expect(reports.sorted() == ["#.#", "#.a.#"])
    }

    @Test func firstAndLastSubscriberAreReported() throws {
        let trie = TopicTrie<Int>()
        let p = try TopicPattern("#.alice.#")
        #expect(trie.insert(p, 1) == true)
        #expect(trie.insert(p, 2) == false)
        #expect(trie.insert(p, 2) == false)
        #expect(trie.patternCount == 1)
        #expect(trie.remove(p, 1) == false)
        #expect(trie.remove(p, 2) == true)
        #expect(trie.patternCount == 0)
        #expect(trie.match(try RouteKey("alice.bob")).isEmpty)
    }

    @Test func unrelatedPatternsAreNotVisited() throws {
        // 10,000 patterns on other words do not change what (or how much) one key matches.
        let trie = TopicTrie<Int>()
        for i in 0..<10_000 { trie.insert(try TopicPattern("user\(i).#"), i) }
        trie.insert(try TopicPattern("#.alice.#"), -1)
        #expect(trie.match(try RouteKey("alice.bob")) == [-1])
        #expect(trie.match(try RouteKey("user42.x")) == [42])
    }
}

@Suite struct RouteClassifierTests {
    @Test func firstMatchingClassNamesTheRoute() throws {
        let c = RouteClassifier([.init(name: "rooms", pattern: try TopicPattern("room.#")),
                                 .init(name: "groups", pattern: try TopicPattern("group.#")),
                                 .init(name: "all-rooms-again", pattern: try TopicPattern("room.*"))])
        #expect(c.classify(try RouteKey("room.lobby")) == "rooms")
        #expect(c.classify(try RouteKey("group.7")) == "groups")
        #expect(c.classify(try RouteKey("alice.bob")) == "other")
        #expect(c.labels == ["rooms", "groups", "all-rooms-again", "other"])
        #expect(c.classIndex("room.lobby") == 0)
        #expect(c.classIndex("group.7") == 1)
        #expect(c.classIndex("alice.bob") == nil)
        #expect(c.classIndex("room..lobby") == nil, "not a routing key: other")
        #expect(c.classIndex("room.#") == nil, "not a routing key: other")
    }

    @Test func metricsCountEveryKeyUnderItsClassLabel() throws {
        let c = RouteClassifier([.init(name: "rooms", pattern: try TopicPattern("room.#")),
                                 .init(name: "rooms", pattern: try TopicPattern("lobby.*")),
                                 .init(name: "groups", pattern: try TopicPattern("group.#"))])
        let metrics = WarrenMetrics(classifier: c, registry: nil)
        #expect(metrics.classes == ["rooms", "rooms", "groups", "other"])
        // A second class with a label already used counts under the first one's.
        #expect(metrics.classIndex("room.a") == 0)
        #expect(metrics.classIndex("lobby.b") == 0)
        #expect(metrics.classIndex("group.g") == 2)
        #expect(metrics.classIndex("alice.bob") == 3)
        #expect(metrics.classIndex("not a key") == 3)
    }
}

@Suite struct AccessControlTests {
    let bob = AccessPolicy.standard.resolved(for: "bob")

    @Test(arguments: ["#", "alice.#", "#.alice.#", "*.*", "*.alice"])
    func bobCannotReadOthers(_ pattern: String) throws {
        #expect(!bob.canSubscribe(try TopicPattern(pattern)))
    }

    @Test(arguments: ["#.bob.#", "bob.#", "alice.bob", "*.bob", "room.lobby", "room.#", "alice.bob.carol"])
    func bobCanReadHisOwn(_ pattern: String) throws {
        #expect(bob.canSubscribe(try TopicPattern(pattern)))
    }

    @Test func publishNeedsAMatchingPattern() throws {
        #expect(!bob.canPublish(try RouteKey("alice.carol")))
        #expect(bob.canPublish(try RouteKey("alice.bob")))
        #expect(bob.canPublish(try RouteKey("room.lobby")))
    }

    @Test func templatesAreValidated() throws {
        try AccessPolicy.standard.validate()
        #expect(throws: RouteError.self) { try AccessPolicy(subscribe: ["#.{user}..#"], publish: []).validate() }
    }

    @Test func everyPlaceholderIsReplaced() throws {
        let rules = AccessPolicy(subscribe: ["dm.{user}.{user}", "team-{user}.#", "room.#"], publish: ["{user}"]).resolved(for: "bo-b")
        #expect(rules.subscribe == [try TopicPattern("dm.bo-b.bo-b"), try TopicPattern("team-bo-b.#"), try TopicPattern("room.#")])
        #expect(rules.publish == [try TopicPattern("bo-b")])
        #expect("{user".replacingOccurrences(of: "{user}", with: "x") == "{user")
        #expect("a{user}".replacingOccurrences(of: "{user}", with: "") == "a")
    }
}

import Testing
@testable import WarrenCore

/// The live queue's bindings decided without a broker: each step is asked, its broker call
/// taken from the state, and applied as the hub would once the broker confirmed it.
@Suite("Live queue bindings")
struct LiveBindingsTests {
    /// Runs `steps` as ``LiveHub`` does; returns the broker calls made ("+key" / "-key").
    private func run(_ steps: [LiveBindings.Step], on b: inout LiveBindings) -> [String] {
        var calls: [String] = []
        for step in steps {
            if let call = b.brokerCall(step) { calls.append((call.bind ? "+" : "-") + call.key) }
            b.apply(step)
        }
        return calls
    }

    @Test func zeroMeansOneBindingPerPatternHoweverMany() {
        var b = LiveBindings(bindAllAfter: 0)
        for i in 1...1000 { #expect(run(b.added("p.\(i)", distinct: i), on: &b) == ["+p.\(i)"]) }
        #expect(!b.all && b.own.count == 1000)
        #expect(run(b.removed("p.1", remaining: (2...1000).map { "p.\($0)" }), on: &b) == ["-p.1"])
    }

    @Test func pastTheLimitHashIsBoundOnceAndNothingElse() {
        var b = LiveBindings(bindAllAfter: 2)
        #expect(run(b.added("a", distinct: 1), on: &b) == ["+a"])
        #expect(run(b.added("b", distinct: 2), on: &b) == ["+b"])
        #expect(run(b.added("c", distinct: 3), on: &b) == ["+#"])
        #expect(run(b.added("d", distinct: 4), on: &b) == [])
        #expect(b.all && b.own == ["a", "b"])
        // Patterns without their own binding leave without a call; own ones are unbound.
        #expect(run(b.removed("d", remaining: ["a", "b", "c"]), on: &b) == [])
        #expect(run(b.removed("a", remaining: ["b", "c"]), on: &b) == ["-a"])
        #expect(b.all)
        // At half the limit (1): what has no binding of its own gets one, then `#` goes.
        #expect(run(b.removed("b", remaining: ["c"]), on: &b) == ["-b", "+c", "-#"])
        #expect(!b.all && b.own == ["c"])
        #expect(run(b.removed("c", remaining: []), on: &b) == ["-c"])
        #expect(b == LiveBindings(bindAllAfter: 2))
    }

    /// `#` as a client's own pattern and `#` as the catch-all are one broker binding: neither
    /// removes it while the other still needs it.
    @Test func hashAsAPatternAndAsTheCatchAllShareOneBinding() {
        var b = LiveBindings(bindAllAfter: 1)
        #expect(run(b.added("#", distinct: 1), on: &b) == ["+#"])
        #expect(run(b.added("x", distinct: 2), on: &b) == [], "the catch-all is bound already")
        #expect(b.all && b.own == ["#"])
        #expect(run(b.removed("#", remaining: ["x"]), on: &b) == [], "still the catch-all")
        #expect(b.all && b.own.isEmpty)
        #expect(run(b.removed("x", remaining: []), on: &b) == ["-#"])

        var c = LiveBindings(bindAllAfter: 1)
        _ = run(c.added("x", distinct: 1), on: &c)
        #expect(run(c.added("y", distinct: 2), on: &c) == ["+#"])
        #expect(run(c.added("#", distinct: 3), on: &c) == [], "as a pattern: the catch-all serves it")
        // Back below the limit with `#` still subscribed: it stays, as the pattern's binding.
        #expect(run(c.removed("y", remaining: ["x", "#"]), on: &c) == [])
        #expect(run(c.removed("x", remaining: ["#"]), on: &c) == ["-x"])
        #expect(c.all)
        // bindAllAfter 1: half is 0, so the catch-all stays until nothing is left.
        #expect(run(c.removed("#", remaining: []), on: &c) == ["-#"])
        #expect(c == LiveBindings(bindAllAfter: 1))
    }

    /// A step the broker refused is not applied: the next decision sees the state before it.
    @Test func aFailedStepLeavesTheStateAsItWas() {
        var b = LiveBindings(bindAllAfter: 1)
        _ = run(b.added("a", distinct: 1), on: &b)
        let steps = b.added("b", distinct: 2)
        #expect(steps == [.bindAll])
        // (bind `#` failed: not applied)
        #expect(b.added("b", distinct: 2) == [.bindAll], "asked again, it binds `#` again")
    }
}

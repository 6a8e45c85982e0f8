import NIOConcurrencyHelpers

/// Holds one call of a ``FakeChannel`` (the next whose description starts with `prefix`) until
/// the test opens it, so a test can act while the bridge waits for the broker.
final class CallGate: Sendable {
    let prefix: String
    private struct State {
        var reached = false
        var opened = false
        var held: CheckedContinuation<Void, Never>?
        var watchers: [CheckedContinuation<Void, Never>] = []
    }
    private let state = NIOLockedValueBox(State())

    init(_ prefix: String) { self.prefix = prefix }

    /// The held call: returns once the gate is open.
    func pass() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let (go, watchers) = state.withLockedValue { s -> (Bool, [CheckedContinuation<Void, Never>]) in
                s.reached = true
                defer { s.watchers = [] }
                if s.opened { return (true, s.watchers) }
                s.held = c
                return (false, s.watchers)
            }
            watchers.forEach { $0.resume() }
            if go { c.resume() }
        }
    }

    /// Returns once the call is being held.
    func reached() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { s -> Bool in
                if s.reached { return true }
                s.watchers.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    /// Lets the held call (and any later one) go on.
    func open() {
        let held = state.withLockedValue { s -> CheckedContinuation<Void, Never>? in
            s.opened = true
            defer { s.held = nil }
            return s.held
        }
        held?.resume()
    }
}

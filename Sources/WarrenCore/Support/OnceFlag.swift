import Atomics

/// True the first time ``first()`` is asked, false after: for what is said once in the log,
/// without a lock on the path that asks.
final class OnceFlag: Sendable {
    private let done = ManagedAtomic(false)

    func first() -> Bool {
        done.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
    }
}

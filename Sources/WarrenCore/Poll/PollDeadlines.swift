import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// When parked long-polls time out: a wheel of `tick`-long slots turned by one repeating task,
/// instead of a NIO timer scheduled and cancelled for every poll (a profile of 500 pollers at
/// 10,000 answers/s put those at ~12 % of Warren's CPU: the timer heap's inserts and removals
/// under the event loop's lock).
///
/// The wheel holds outputs, not polls. An output is put in the slot of its parked poll's
/// deadline only when it is not in the wheel already for that time or earlier
/// (``PollOutput``'s `wheelDue`). When the wheel reaches the slot, the output wakes its parked
/// poll if that poll's own deadline has come, and otherwise puts itself back for it
/// (``PollOutput/expire(at:deadlines:)``). A poller that polls again every few milliseconds,
/// each poll answered by a delivery, so puts its output in the wheel once per `wait`, not once
/// per poll. Once per poll, every entry was an append under this lock, which both event loops
/// take, and, a `wait` later, a visit to an output long gone cold, to find its poll answered.
///
/// A poll times out never early and up to one `tick` late.
public final class PollDeadlines: Sendable {
    public static let tick = TimeAmount.milliseconds(100)

    private struct State {
        var slots: [[PollOutput]]
        var task: RepeatedTask?
    }

    private let state: NIOLockedValueBox<State>
    /// Turns made so far: a slot's entries are due at a turn number (a deadline), and the slot
    /// of turn `n` is `n % slots.count`. Written under the lock, read without it.
    private let turns = Atomic<UInt64>(0)
    private let slotCount: Int

    /// `longest`: the longest wait it is asked to time (longer ones are cut to it).
    public init(loop: any EventLoop, longest: TimeAmount) {
        let count = Int(longest.nanoseconds / Self.tick.nanoseconds) + 3
        slotCount = count
        state = NIOLockedValueBox(State(slots: Array(repeating: [], count: count)))
        let task = loop.scheduleRepeatedTask(initialDelay: Self.tick, delay: Self.tick) { [weak self] _ in self?.turn() }
        state.withLockedValue { $0.task = task }
    }

    deinit { state.withLockedValue { $0.task?.cancel() } }

    /// The turn at which a poll parking now with `timeout` is due: never before `timeout` has
    /// passed. The wheel turns next somewhere within a tick from now, so one tick more than the
    /// timeout's own.
    func due(after timeout: TimeAmount) -> UInt64 {
        let ticks = Int((timeout.nanoseconds + Self.tick.nanoseconds - 1) / Self.tick.nanoseconds) + 1
        return turns.load(ordering: .relaxed) + UInt64(max(1, min(ticks, slotCount - 1)))
    }

    /// Puts `output` in the slot of turn `due` (``due(after:)``, or a poll's deadline read from
    /// its output), or of the next turn if that one has come meanwhile; returns the turn it is in.
    func add(_ output: PollOutput, due: UInt64) -> UInt64 {
        state.withLockedValue { s in
            let at = max(due, turns.load(ordering: .relaxed) + 1)
            s.slots[Int(at % UInt64(slotCount))].append(output)
            return at
        }
    }

    /// Outputs in the wheel now (for tests).
    var entryCount: Int { state.withLockedValue { $0.slots.reduce(0) { $0 + $1.count } } }

    /// Moves to the next slot and hands its outputs their turn.
    private func turn() {
        let (turn, due) = state.withLockedValue { s -> (UInt64, [PollOutput]) in
            let turn = turns.load(ordering: .relaxed) + 1
            turns.store(turn, ordering: .relaxed)
            let i = Int(turn % UInt64(slotCount))
            defer { s.slots[i].removeAll(keepingCapacity: false) }
            return (turn, s.slots[i])
        }
        for output in due { output.expire(at: turn, deadlines: self) }
    }
}

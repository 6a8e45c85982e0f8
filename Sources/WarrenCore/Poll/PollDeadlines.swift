import NIOConcurrencyHelpers
import NIOCore

/// When parked long-polls time out: a wheel of `tick`-long slots turned by one repeating task,
/// instead of a NIO timer scheduled and cancelled for every poll (a profile of 500 pollers at
/// 10,000 answers/s put those at ~12 % of Warren's CPU: the timer heap's inserts and removals
/// under the event loop's lock).
///
/// A parked poll is put in the slot its deadline falls in; when the wheel reaches that slot it
/// wakes the poll if it is still the one parked there (``PollOutput/wake(parked:)``), which
/// does nothing when a delivery answered it earlier. So a poll times out never early and up
/// to one `tick` late, and an answered poll's entry stays until its slot comes round.
public final class PollDeadlines: Sendable {
    public static let tick = TimeAmount.milliseconds(100)

    private struct Entry {
        let output: PollOutput
        let id: UInt64
    }

    private struct State {
        var slots: [[Entry]]
        /// The slot the wheel is at (its entries are due).
        var current = 0
        var task: RepeatedTask?
    }

    private let state: NIOLockedValueBox<State>

    /// `longest`: the longest wait it is asked to time (longer ones are cut to it).
    public init(loop: any EventLoop, longest: TimeAmount) {
        let count = Int(longest.nanoseconds / Self.tick.nanoseconds) + 3
        state = NIOLockedValueBox(State(slots: Array(repeating: [], count: count)))
        let task = loop.scheduleRepeatedTask(initialDelay: Self.tick, delay: Self.tick) { [weak self] _ in self?.turn() }
        state.withLockedValue { $0.task = task }
    }

    deinit { state.withLockedValue { $0.task?.cancel() } }

    /// Wakes the poll parked on `output` as `id` once `timeout` has passed (rounded up to a tick).
    func add(_ output: PollOutput, id: UInt64, after timeout: TimeAmount) {
        // The wheel turns next somewhere within a tick from now: one tick more than the
        // timeout's own, so a poll is never answered before its `wait` (at most a tick after).
        let ticks = Int((timeout.nanoseconds + Self.tick.nanoseconds - 1) / Self.tick.nanoseconds) + 1
        state.withLockedValue { s in
            let slot = (s.current + min(ticks, s.slots.count - 1)) % s.slots.count
            s.slots[slot].append(Entry(output: output, id: id))
        }
    }

    /// Moves to the next slot and wakes what is due there.
    private func turn() {
        let due = state.withLockedValue { s -> [Entry] in
            s.current = (s.current + 1) % s.slots.count
            defer { s.slots[s.current].removeAll(keepingCapacity: false) }
            return s.slots[s.current]
        }
        for entry in due { entry.output.wake(parked: entry.id) }
    }
}

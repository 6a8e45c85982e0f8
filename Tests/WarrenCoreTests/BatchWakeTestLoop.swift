import Dispatch
import NIOConcurrencyHelpers
import NIOCore
@testable import WarrenCore

/// A ``BatchWakeEventLoop`` over a NIO loop: tasks queued without waking wait until the loop
/// is woken, alone or with the other loops of its ``Group``, and every wake is logged, so a
/// test sees how the live fan-out woke its loops.
final class BatchWakeTestLoop: BatchWakeEventLoop, @unchecked Sendable {
    /// Loops woken together, and the log of every wake of its loops.
    final class Group: Sendable {
        let members = NIOLockedValueBox<[BatchWakeTestLoop]>([])
        let log = NIOLockedValueBox<[String]>([])
    }

    let base: any EventLoop
    let name: String
    let group: Group
    private let held = NIOLockedValueBox<(tasks: [@Sendable () -> Void], due: Bool)>(([], false))

    init(_ base: any EventLoop, name: String, group: Group) {
        self.base = base
        self.name = name
        self.group = group
        group.members.withLockedValue { $0.append(self) }
    }

    func enqueueWithoutWaking(_ task: @escaping @Sendable () -> Void) -> Bool {
        held.withLockedValue { h in
            h.tasks.append(task)
            if h.due { return false }
            h.due = true
            return true
        }
    }

    func wake() {
        group.log.withLockedValue { $0.append("wake \(name)") }
        release()
    }

    var wakeGroup: ObjectIdentifier? { ObjectIdentifier(group) }

    func wakeAll() {
        group.log.withLockedValue { $0.append("wake all") }
        for loop in group.members.withLockedValue({ $0 }) { loop.release() }
    }

    private func release() {
        let tasks = held.withLockedValue { h -> [@Sendable () -> Void] in
            h.due = false
            defer { h.tasks = [] }
            return h.tasks
        }
        base.execute { for task in tasks { task() } }
    }

    // MARK: EventLoop, as the base loop

    var inEventLoop: Bool { base.inEventLoop }

    func execute(_ task: @escaping @Sendable () -> Void) { base.execute(task) }

    func scheduleTask<T>(deadline: NIODeadline, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        base.scheduleTask(deadline: deadline, task)
    }

    func scheduleTask<T>(in delay: TimeAmount, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        base.scheduleTask(in: delay, task)
    }

    func shutdownGracefully(queue: DispatchQueue, _ callback: @escaping @Sendable (Error?) -> Void) {
        queue.async { callback(nil) }
    }
}

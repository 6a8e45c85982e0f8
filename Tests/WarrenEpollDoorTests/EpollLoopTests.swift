#if os(Linux)
import Foundation
import NIOCore
import NIOConcurrencyHelpers
import Testing
@testable import WarrenEpollDoor

/// The epoll door's thread as the NIO `EventLoop` Warren's session model takes it for: tasks
/// from any thread run on it in order, timers in deadline order unless cancelled, promises and
/// futures complete on it, and a shutdown ends it.
@Suite("The epoll door's loop")
struct EpollLoopTests {
    @Test func tasksFromOtherThreadsRunOnTheLoopInTheOrderEachThreadGaveThem() async throws {
        let loop = EpollLoop(name: "test-epoll")
        defer { loop.shutdownGracefully { _ in } }
        let seen = NIOLockedValueBox<[Int: [Int]]>([:])
        let offLoop = NIOLockedValueBox(0)
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<2 {
                group.addTask {
                    for i in 0..<1_000 {
                        loop.execute {
                            if !loop.inEventLoop { offLoop.withLockedValue { $0 += 1 } }
                            seen.withLockedValue { $0[thread, default: []].append(i) }
                        }
                    }
                }
            }
        }
        // A sentinel given after every task: it runs after them.
        try await loop.submit {}.get()
        #expect(offLoop.withLockedValue { $0 } == 0)
        #expect(seen.withLockedValue { $0 } == [0: Array(0..<1_000), 1: Array(0..<1_000)])
        #expect(!loop.inEventLoop)
    }

    @Test func timersFireInDeadlineOrderAndACancelledOneNever() async throws {
        let loop = EpollLoop(name: "test-epoll")
        defer { loop.shutdownGracefully { _ in } }
        let fired = NIOLockedValueBox<[Int]>([])
        let now = NIODeadline.now()
        _ = loop.scheduleTask(deadline: now + .milliseconds(60)) { fired.withLockedValue { $0.append(60) } }
        _ = loop.scheduleTask(deadline: now + .milliseconds(20)) { fired.withLockedValue { $0.append(20) } }
        let cancelled = loop.scheduleTask(deadline: now + .milliseconds(30)) { fired.withLockedValue { $0.append(30) } }
        _ = loop.scheduleTask(deadline: now + .milliseconds(40)) { fired.withLockedValue { $0.append(40) } }
        cancelled.cancel()
        // The sentinel: the last deadline.
        try await loop.scheduleTask(deadline: now + .milliseconds(80)) {}.futureResult.get()
        #expect(fired.withLockedValue { $0 } == [20, 40, 60])
        await #expect(throws: EventLoopError.cancelled) { try await cancelled.futureResult.get() }
    }

    @Test func aTimerScheduledFromAnotherThreadWakesTheLoop() async throws {
        let loop = EpollLoop(name: "test-epoll")
        defer { loop.shutdownGracefully { _ in } }
        // The loop sleeps in epoll_wait with no timer; this one must shorten its wait.
        let onLoop = try await loop.scheduleTask(in: .milliseconds(10)) { loop.inEventLoop }.futureResult.get()
        #expect(onLoop)
    }

    @Test func aPromiseCompletedElsewhereCallsBackOnTheLoop() async throws {
        let loop = EpollLoop(name: "test-epoll")
        defer { loop.shutdownGracefully { _ in } }
        let promise = loop.makePromise(of: Int.self)
        let onLoop = promise.futureResult.map { ($0, loop.inEventLoop) }
        Thread { promise.succeed(7) }.start()
        let (value, wasOnLoop) = try await onLoop.get()
        #expect(value == 7)
        #expect(wasOnLoop)
    }

    @Test func aShutdownEndsTheThreadAfterTheTasksGivenBeforeIt() async throws {
        let loop = EpollLoop(name: "test-epoll")
        let ran = NIOLockedValueBox(0)
        for _ in 0..<10 { loop.execute { ran.withLockedValue { $0 += 1 } } }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.shutdownGracefully { _ in done.resume() }
        }
        #expect(ran.withLockedValue { $0 } == 10)
        // Given after the end: dropped, not run on a thread that is gone.
        loop.execute { ran.withLockedValue { $0 += 1 } }
        #expect(ran.withLockedValue { $0 } == 10)
    }

    /// The live fan-out queues a message's share on each loop of the door, then wakes them all
    /// with one write to their shared bell; a loop's own wake-ups go on working beside it.
    @Test(.timeLimit(.minutes(1))) func oneRingOfTheBellWakesEveryLoopThatShareIt() async throws {
        let bell = EpollBell()
        let loops = [EpollLoop(name: "test-epoll-a", bell: bell), EpollLoop(name: "test-epoll-b", bell: bell)]
        defer { for loop in loops { loop.shutdownGracefully { _ in } } }
        #expect(loops[0].wakeGroup != nil && loops[0].wakeGroup == loops[1].wakeGroup)
        for round in 0..<3 {
            let promises = loops.map { $0.makePromise(of: Bool.self) }
            for (loop, promise) in zip(loops, promises) {
                let due = loop.enqueueWithoutWaking { promise.succeed(loop.inEventLoop) }
                #expect(due, "asleep with nothing queued: the caller must wake it (round \(round))")
                let again = loop.enqueueWithoutWaking {}
                #expect(!again, "already due to be woken")
            }
            loops[1].wakeAll()
            for promise in promises { #expect(try await promise.futureResult.get()) }
            // Each loop's own eventfd still wakes it alone.
            #expect(try await loops[0].submit { loops[0].inEventLoop }.get())
        }
        // Without a bell, waking "all" wakes the loop itself.
        let alone = EpollLoop(name: "test-epoll")
        defer { alone.shutdownGracefully { _ in } }
        #expect(alone.wakeGroup == nil)
        let promise = alone.makePromise(of: Void.self)
        #expect(alone.enqueueWithoutWaking { promise.succeed() })
        alone.wakeAll()
        try await promise.futureResult.get()
    }
}
#endif

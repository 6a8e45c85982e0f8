import NIOCore

/// Runs a task's jobs on one event loop (SE-0417): a WebSocket's serving task prefers its
/// channel's loop, so reading a frame, handling it in the session and writing the answer stay
/// on the thread that read the bytes, with no hop to the concurrency pool and back per frame.
///
/// Measured (BENCHMARKS.md, issue 18): with the serving task on the pool, 10.8 % of Warren's
/// samples during `inbox` were threads being switched.
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }
}

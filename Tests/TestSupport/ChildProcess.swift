import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A program the tests start, with `posix_spawn` and `waitpid`, instead of Foundation's
/// `Process`.
///
/// In Swift 6.3.1, `Process.run()` on Linux reads past a buffer while it lists
/// `/proc/self/fd` (`findMaximumOpenFromProcSelfFD()` copies a whole 256-byte `d_name` out of
/// `readdir`'s buffer; swiftlang/swift-corelibs-foundation#5472), and crashes the test run
/// with a segmentation fault now and then: seen here in 2 of 11 filtered local runs, the
/// backtrace in `Process.run()`'s `memmove`. A test run with thousands of sockets open lists
/// a long directory there on every start of `warren` or `rabbitmqctl`.
///
/// Here the child's descriptors from 3 up are closed by the spawn itself
/// (`posix_spawn_file_actions_addclosefrom_np`), and the pipes are made close-on-exec, so no
/// child holds another's pipe open. swift-subprocess does this too, but its `Execution` lives
/// only inside an async closure, and the harness keeps a `warren` running across a test's
/// steps and starts it from synchronous code.
public final class ChildProcess: @unchecked Sendable {
    public let processIdentifier: pid_t
    /// The read end of the child's standard output and error (one pipe), when piped.
    public let output: FileHandle?
    /// The write end of the child's standard input, when piped.
    public let input: FileHandle?
    /// The wait status, once `waitpid` has reaped the child.
    private var status: Int32?
    private let lock = NSLock()

    public struct SpawnError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts `executable` with `arguments`. `environment` nil: this process's. Standard input
    /// is a pipe when `input` is true, else `/dev/null`; standard output and error go to one
    /// pipe when `output` is true, else to `/dev/null`.
    public init(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil, directory: URL? = nil,
                input: Bool = false, output: Bool = true) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The parent's ends of the pipes, and the child's (closed here once it is spawned).
        var parentEnds: [Int32] = [], childEnds: [Int32] = []
        func pipePair() throws -> (read: Int32, write: Int32) {
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { throw SpawnError(description: "pipe: errno \(errno)") }
            // Close-on-exec, for a program started otherwise meanwhile (the spawn here closes
            // every descriptor from 3 up in its child anyway).
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            return (fds[0], fds[1])
        }
        do {
            if input {
                let p = try pipePair()
                parentEnds.append(p.write)
                childEnds.append(p.read)
                posix_spawn_file_actions_adddup2(&actions, p.read, 0)
            } else {
                posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            }
            if output {
                let p = try pipePair()
                parentEnds.append(p.read)
                childEnds.append(p.write)
                posix_spawn_file_actions_adddup2(&actions, p.write, 1)
                posix_spawn_file_actions_adddup2(&actions, p.write, 2)
            } else {
                for fd: Int32 in [1, 2] { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0) }
            }
        } catch {
            for fd in parentEnds + childEnds { close(fd) }
            throw error
        }
        if let directory {
            guard let addchdir = Self.addchdir else { throw SpawnError(description: "posix_spawn_file_actions_addchdir_np is missing") }
            _ = addchdir(&actions, directory.path)
        }
        guard let addclosefrom = Self.addclosefrom else { throw SpawnError(description: "posix_spawn_file_actions_addclosefrom_np is missing") }
        _ = addclosefrom(&actions, 3)

        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup($0) } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable.path, &actions, nil, argv, envp)
        for fd in childEnds { close(fd) }
        guard rc == 0 else {
            for fd in parentEnds { close(fd) }
            throw SpawnError(description: "posix_spawn \(executable.path): \(String(cString: strerror(rc)))")
        }
        processIdentifier = pid
        self.input = input ? FileHandle(fileDescriptor: parentEnds[0], closeOnDealloc: true) : nil
        self.output = output ? FileHandle(fileDescriptor: parentEnds[input ? 1 : 0], closeOnDealloc: true) : nil
    }

    // glibc's (2.29, 2.34), not in the Glibc module's headers (they need _GNU_SOURCE): looked up once.
    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private typealias AddClosefrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addchdir: AddChdir? = dlsym(nil, "posix_spawn_file_actions_addchdir_np").map { unsafeBitCast($0, to: AddChdir.self) }
    private static let addclosefrom: AddClosefrom? =
        dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: AddClosefrom.self) }

    /// Whether the child has not exited yet (reaps it if it has).
    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        return reap() == nil
    }

    /// Blocks until the child exits.
    public func waitUntilExit() {
        // Waits outside the lock without reaping (`WNOWAIT`), so `isRunning` stays answerable
        // meanwhile and the child is reaped in one place, under the lock: a `signal(_:)` can
        // never reach a number reaped between its check and its `kill`.
        var info = siginfo_t()
        while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) == -1, errno == EINTR {}
        lock.lock()
        defer { lock.unlock() }
        _ = reap()
    }

    /// The exit status, or the signal that ended the child (as Foundation's `Process` reports
    /// it); -1 while it runs.
    public var terminationStatus: Int32 {
        lock.lock()
        defer { lock.unlock() }
        guard let s = reap() else { return -1 }
        // WIFEXITED / WEXITSTATUS / WTERMSIG by hand (the macros are not imported).
        return (s & 0x7f) == 0 ? (s >> 8) & 0xff : s & 0x7f
    }

    /// Sends SIGTERM while the child runs.
    public func terminate() { signal(SIGTERM) }

    /// Sends `number` while the child runs (never to a reaped child's number, which the
    /// system may have given to another process since).
    public func signal(_ number: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if reap() == nil { kill(processIdentifier, number) }
    }

    /// The wait status if the child has exited (under `lock`).
    private func reap() -> Int32? {
        if let status { return status }
        var s: Int32 = 0
        while true {
            let r = waitpid(processIdentifier, &s, WNOHANG)
            if r == processIdentifier {
                status = s
                return s
            }
            if r == -1, errno == EINTR { continue }
            return nil
        }
    }
}

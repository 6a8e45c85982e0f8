import Foundation
import TestSupport
import NIOConcurrencyHelpers

/// Runs the built `warren` executable as a child process and watches its log.
final class WarrenProcess: @unchecked Sendable, Hashable {
    static func == (a: WarrenProcess, b: WarrenProcess) -> Bool { a === b }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    static var packageRoot: URL { TestEnvironment.packageRoot }

    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["WARREN_BINARY"] { return URL(fileURLWithPath: path) }
        // The test bundle sits in the same products directory as the executable.
        let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidate = products.appendingPathComponent("warren")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        return packageRoot.appendingPathComponent(".build/debug/warren")
    }

    let process: ChildProcess
    private let output = NIOLockedValueBox<(text: String, waiters: [(String, Int, CheckedContinuation<Void, Never>)])>(("", []))
    /// Whether the output pipe reached its end (the process and its copies of the pipe are gone).
    private let outputEnded = NIOLockedValueBox(false)

    /// The process's standard input, when it was started with `input: true`.
    private var input: FileHandle? { process.input }

    init(_ arguments: [String], environment: [String: String] = [:], executable: URL? = nil, input: Bool = false) throws {
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process = try ChildProcess(executable ?? Self.binary, arguments, environment: env, directory: Self.packageRoot, input: input)
        process.output?.readabilityHandler = { [output, outputEnded] handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                outputEnded.withLockedValue { $0 = true }
                handle.readabilityHandler = nil
                return
            }
            let ready = output.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                state.text += String(decoding: data, as: UTF8.self)
                let text = state.text
                let done = state.waiters.filter { Self.count(of: $0.0, in: text) >= $0.1 }
                state.waiters.removeAll { w in Self.count(of: w.0, in: text) >= w.1 }
                return done.map(\.2)
            }
            ready.forEach { $0.resume() }
        }
        _ = Self.running.withLockedValue { $0.insert(self) }
    }

    /// Every `warren` this test run started and has not seen exit: killed when the run exits
    /// (a test that failed or threw before its `defer` ran would otherwise leave one serving,
    /// holding its port and broker queues, for the rest of the run and after it).
    /// Only one not reaped yet is killed: never a number the system gave to another process since.
    private static let running: NIOLockedValueBox<Set<WarrenProcess>> = {
        atexit {
            for started in WarrenProcess.running.withLockedValue({ $0 }) { started.process.signal(SIGKILL) }
        }
        return NIOLockedValueBox([])
    }()

    var log: String { output.withLockedValue { $0.text } }

    /// Writes a line to the process's standard input (started with `input: true`).
    func type(_ line: String) { input?.write(Data((line + "\n").utf8)) }

    /// Closes the process's standard input: end of input.
    func endInput() { try? input?.close() }

    static func count(of needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    /// Waits until `needle` has appeared `times` times in the log; false on timeout.
    func waitForLog(_ needle: String, times: Int = 1, timeout: Duration = .seconds(60)) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let already = self.output.withLockedValue { state -> Bool in
                        if Self.count(of: needle, in: state.text) >= times { return true }
                        state.waiters.append((needle, times, c))
                        return false
                    }
                    if already { c.resume() }
                }
                return true
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next()!
            if !first {
                // Release the log waiter so the group can finish.
                let pending = self.output.withLockedValue { s in
                    let w = s.waiters.map(\.2)
                    s.waiters.removeAll()
                    return w
                }
                pending.forEach { $0.resume() }
            }
            group.cancelAll()
            return first
        }
    }

    func terminate() { process.terminate() }

    /// Waits for exit without blocking a thread of the cooperative pool for long; nil on timeout.
    func waitForExit(timeout: Duration = .seconds(20)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        // Exited, its last output may still be in the pipe: read to its end (bounded), so `log`
        // holds all of it (a check that printed its reason and exited at once was seen with an
        // empty log).
        let drained = ContinuousClock.now + .seconds(5)
        while !outputEnded.withLockedValue({ $0 }), ContinuousClock.now < drained {
            try? await Task.sleep(for: .milliseconds(5))
        }
        _ = Self.running.withLockedValue { $0.remove(self) }
        return process.terminationStatus
    }

    /// A port nothing listens on now (the kernel's pick, as `freePort()`), not a random guess
    /// that could be a port another process holds.
    static func freePort() -> Int { (try? TestSupport.freePort()) ?? Int.random(in: 20_000...32_000) }
}

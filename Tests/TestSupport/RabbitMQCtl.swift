import Foundation

/// Shared by the broker-backed test targets: the package root and rabbitmqctl
/// run through the project's own script (same private node, cookie and name).
public enum TestEnvironment {
    public static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    public struct CtlError: Error, CustomStringConvertible {
        public let output: String
        public var description: String { "rabbitmqctl failed: \(output)" }
    }

    /// Runs `scripts/rabbitmq.sh ctl ARGS` and returns its output.
    @discardableResult
    public static func rabbitmqctl(_ args: [String]) throws -> String {
        let (status, out) = try run(packageRoot.appendingPathComponent("scripts/rabbitmq.sh"), ["ctl"] + args)
        guard status == 0 else { throw CtlError(output: out) }
        return out
    }

    /// Runs a short-lived program to its end: its exit status and output (stdout and stderr).
    public static func run(_ executable: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let child = try ChildProcess(executable, arguments)
        let data = child.output?.readDataToEndOfFile() ?? Data()
        child.waitUntilExit()
        return (child.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

extension TestEnvironment {
    /// Runs a program to its end, output discarded; its exit status. Waits without blocking a
    /// thread: for scripts that start daemons (`scripts/postgres.sh start`), which can take a
    /// while (Foundation's `Process` was also seen never to notice such a child's exit).
    public static func spawnAndWait(_ executable: URL, _ arguments: [String]) async throws -> Int32 {
        let child = try ChildProcess(executable, arguments, output: false)
        while child.isRunning { try await Task.sleep(for: .milliseconds(50)) }
        return child.terminationStatus
    }
}

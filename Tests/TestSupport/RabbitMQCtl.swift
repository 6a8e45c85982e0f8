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
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

#if canImport(Glibc)
import Glibc
#endif

extension TestEnvironment {
    /// Runs a program to its end with posix_spawn and waitpid, output discarded; its exit status.
    /// For scripts that start daemons (`scripts/postgres.sh start`): Foundation's `Process` was
    /// seen never to notice such a child's exit (it stayed a zombie, `waitUntilExit` hung).
    public static func spawnAndWait(_ executable: URL, _ arguments: [String]) async throws -> Int32 {
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        let rc = posix_spawn(&pid, executable.path, &actions, nil, argv, environ)
        guard rc == 0 else { throw CtlError(output: "posix_spawn \(executable.path): \(rc)") }
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if r < 0 { throw CtlError(output: "waitpid: \(errno)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        // WIFEXITED / WEXITSTATUS by hand (macros are not imported).
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
    }
}

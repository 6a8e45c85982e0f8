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

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
        let process = Process()
        process.executableURL = packageRoot.appendingPathComponent("scripts/rabbitmq.sh")
        process.arguments = ["ctl"] + args
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let out = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else { throw CtlError(output: out) }
        return out
    }
}

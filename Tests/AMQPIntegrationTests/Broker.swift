import AMQPClient
import Foundation
import TestSupport
import Logging
import NIOCore

/// The local broker the tests run against (scripts/rabbitmq.sh start brings it up).
enum Broker {
    static var url: String { ProcessInfo.processInfo.environment["WARREN_TEST_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2f" }

    static func configuration(heartbeat: UInt16 = 60) throws -> AMQPConfiguration {
        var c = try AMQPConfiguration(url: url)
        c.heartbeat = heartbeat
        c.recovery = RecoveryPolicy(initialDelay: .milliseconds(50), maxDelay: .seconds(1))
        c.connectionName = "warren-tests"
        return c
    }

    static func connect(heartbeat: UInt16 = 60, name: String = #function) async throws -> AMQPConnection {
        var c = try configuration(heartbeat: heartbeat)
        c.connectionName = "test:\(name)"
        var logger = Logger(label: "amqp-test")
        logger.logLevel = .warning
        return try await AMQPConnection.connect(configuration: c, logger: logger)
    }

    /// A name no other test (or earlier run) uses.
    static func unique(_ prefix: String) -> String {
        "test.\(prefix).\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Runs rabbitmqctl through the project's script.
    @discardableResult
    static func ctl(_ args: String...) throws -> String { try TestEnvironment.rabbitmqctl(args) }
}

extension AMQPConnection {
    /// Waits for the next event matching `predicate`, up to `timeout`.
    func waitFor(_ timeout: Duration = .seconds(30), _ events: AsyncStream<AMQPConnectionEvent>,
                 _ predicate: @escaping @Sendable (AMQPConnectionEvent) -> Bool) async throws {
        try await firstMatch(in: events, within: timeout, where: predicate)
    }
}

/// Bounds an async operation so a broken test fails instead of hanging.
func within<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let result = try await group.next()!  else { throw TimedOut() }
        return result
    }
}

/// Collects values produced by another task and lets a test await a condition on them
/// (woken by each new value, not by polling), failing after a timeout.
actor Collector<Value: Sendable> {
    private(set) var values: [Value] = []
    private var waiters: [(id: Int, predicate: @Sendable ([Value]) -> Bool, continuation: CheckedContinuation<Void, Error>)] = []
    private var nextID = 0

    func append(_ value: Value) {
        values.append(value)
        let ready = waiters.filter { $0.predicate(values) }
        waiters.removeAll { w in ready.contains { $0.id == w.id } }
        ready.forEach { $0.continuation.resume() }
    }

    func wait(_ timeout: Duration = .seconds(20), until predicate: @escaping @Sendable ([Value]) -> Bool) async throws {
        if predicate(values) { return }
        let id = nextID
        nextID += 1
        let timer = Task {
            try await Task.sleep(for: timeout)
            self.expire(id)
        }
        defer { timer.cancel() }
        try await withCheckedThrowingContinuation { continuation in
            waiters.append((id, predicate, continuation))
        }
    }

    private func expire(_ id: Int) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: index).continuation.resume(throwing: TimedOut())
    }
}

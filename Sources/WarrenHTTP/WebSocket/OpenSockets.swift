import NIOConcurrencyHelpers
import NIOCore

/// The open WebSocket outputs, so a drain can close each with 1001 itself.
final class OpenSockets: Sendable {
    private let outputs = NIOLockedValueBox<[ObjectIdentifier: WebSocketOutput]>([:])

    func add(_ output: WebSocketOutput) { outputs.withLockedValue { $0[ObjectIdentifier(output)] = output } }
    func remove(_ output: WebSocketOutput) { _ = outputs.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(output)) } }
    var count: Int { outputs.withLockedValue { $0.count } }

    func closeAll(code: UInt16, reason: String) {
        for output in outputs.withLockedValue({ Array($0.values) }) { output.close(code: code, reason: reason) }
    }
}

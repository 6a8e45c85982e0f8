import NIOConcurrencyHelpers
import NIOCore
import WarrenCore

/// The open WebSockets' and event streams' outputs, so a drain can close each itself (1001).
final class OpenSockets: Sendable {
    private let outputs = NIOLockedValueBox<[ObjectIdentifier: any SessionOutput]>([:])

    func add(_ output: any SessionOutput) { outputs.withLockedValue { $0[ObjectIdentifier(output)] = output } }
    func remove(_ output: any SessionOutput) { _ = outputs.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(output)) } }
    var count: Int { outputs.withLockedValue { $0.count } }

    func closeAll(code: UInt16, reason: String) {
        for output in outputs.withLockedValue({ Array($0.values) }) { output.close(code: code, reason: reason) }
    }
}

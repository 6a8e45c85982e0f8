import Foundation
import HummingbirdWSClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOWebSocket
import WarrenCore

/// Values produced elsewhere, awaited one by one with a timeout.
actor Mailbox<Value: Sendable> {
    private var queue: [Value] = []
    private var waiters: [(id: Int, continuation: CheckedContinuation<Value?, Never>)] = []
    private var nextID = 0
    private var finished = false

    func append(_ value: Value) {
        if !waiters.isEmpty {
            waiters.removeFirst().continuation.resume(returning: value)
        } else {
            queue.append(value)
        }
    }

    func finish() {
        finished = true
        waiters.forEach { $0.continuation.resume(returning: nil) }
        waiters.removeAll()
    }

    /// The next value, or nil when finished or after `timeout`. Concurrent callers are served in order.
    func next(timeout: Duration) async -> Value? {
        if !queue.isEmpty { return queue.removeFirst() }
        if finished { return nil }
        let id = nextID
        nextID += 1
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            await self?.expire(id)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { waiters.append((id, $0)) }
    }

    private func expire(_ id: Int) {
        guard let i = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: i).continuation.resume(returning: nil)
    }

    var pending: Int { queue.count }
}

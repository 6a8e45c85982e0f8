import AMQPClient
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOHTTP1
import Testing
import WarrenCore

/// What the soak test saw: every acknowledged publish, every delivery, per subscriber.
actor SoakLedger {
    /// "p/n" of every publish a client was told succeeded (puback, 202, broker confirm).
    private(set) var acked: Set<String> = []
    /// Publishes that left the client (a write that did not fail at once, an HTTP answer).
    private(set) var sent = 0
    /// Per subscriber: "p/n" → deliveries; envelope ids seen (for duplicates).
    private var delivered: [String: [String: Int]] = [:]
    private var ids: [String: Set<String>] = [:]
    /// Per subscriber and publisher connection: message numbers in first-delivery order.
    private var firstDeliveries: [String: [Int]] = [:]
    private(set) var duplicates = 0

    func published() { sent += 1 }
    func ack(_ key: String) { acked.insert(key) }

    /// Records a delivery; checks publish order per publisher connection among first deliveries.
    func deliver(subscriber: String, id: String, p: String, c: Int, n: Int, redelivered: Bool) {
        let key = "\(p)/\(n)"
        delivered[subscriber, default: [:]][key, default: 0] += 1
        if !ids[subscriber, default: []].insert(id).inserted { duplicates += 1 }
        guard !redelivered, delivered[subscriber]![key]! == 1 else { return }
        firstDeliveries["\(subscriber) \(p)/c\(c)", default: []].append(n)
    }

    /// Acknowledged messages delivered (first time, not redelivered) after a later one from the
    /// same publisher connection. Unacknowledged publishes are left out: one answered
    /// `unavailable` may still reach the queue later (its outcome was unknown).
    var orderViolations: [String] {
        var found: [String] = []
        for (stream, ns) in firstDeliveries.sorted(by: { $0.key < $1.key }) {
            let p = String(stream.split(separator: " ")[1].split(separator: "/")[0])
            var last = -1
            for n in ns where acked.contains("\(p)/\(n)") {
                if n <= last, found.count < 20 { found.append("\(stream): \(n) after \(last)") }
                last = max(last, n)
            }
        }
        return found
    }

    /// Acknowledged messages not (yet) delivered to `subscriber`.
    func missing(_ subscriber: String) -> Int {
        let got = delivered[subscriber] ?? [:]
        return acked.reduce(0) { $0 + (got[$1] == nil ? 1 : 0) }
    }

    /// Up to `limit` acknowledged messages per subscriber not delivered to it ("subscriber: p/n",
    /// sorted): what a failed run names, so that a loss can be traced to its publisher and moment.
    func missingKeys(_ subscribers: [String], limit: Int = 10) -> [String] {
        subscribers.flatMap { s in
            let got = delivered[s] ?? [:]
            return acked.filter { got[$0] == nil }.sorted().prefix(limit).map { "\(s): \($0)" }
        }
    }

    func deliveredPairs(_ subscribers: [String]) -> Int {
        subscribers.reduce(0) { total, s in
            let got = delivered[s] ?? [:]
            return total + acked.reduce(0) { $0 + (got[$1] == nil ? 0 : 1) }
        }
    }
}

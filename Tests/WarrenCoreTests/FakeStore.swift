import AMQPClient
import Logging
import NIOConcurrencyHelpers
import Testing
@testable import WarrenCore

/// A store that keeps batches in memory, fails when told to, and holds each write until the
/// test lets it finish: what the writer does around a commit, seen event by event.
final class FakeStore: ConversationStore {
    private struct State {
        var batches: [[StoredMessage]] = []
        var fences: [String] = []
        var failures = 0
        var held: [CheckedContinuation<Void, Never>] = []
        var holding = false
        var bound: [String: [String]] = [:]
        /// A batch holding a message with this text in its envelope is refused (as PostgreSQL
        /// refuses a NUL), every time.
        var refusing: String?
    }
    private let state = NIOLockedValueBox(State())

    var batches: [[StoredMessage]] { state.withLockedValue { $0.batches } }
    func fail(next n: Int) { state.withLockedValue { $0.failures = n } }
    func refuse(_ text: String) { state.withLockedValue { $0.refusing = text } }
    func hold(_ on: Bool) { state.withLockedValue { $0.holding = on } }
    /// Lets every held write finish.
    func release() {
        let held = state.withLockedValue { s in defer { s.held = [] }; return s.held }
        for c in held { c.resume() }
    }
    var heldWrites: Int { state.withLockedValue { $0.held.count } }

    var fences: [String] { state.withLockedValue { $0.fences } }

    func write(_ messages: [StoredMessage], fences: [String]) async throws {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let hold = state.withLockedValue { s -> Bool in
                if s.holding { s.held.append(c) }
                return s.holding
            }
            if !hold { c.resume() }
        }
        try state.withLockedValue { s in
            if s.failures > 0 {
                s.failures -= 1
                throw StoreTestError()
            }
            if let text = s.refusing, messages.contains(where: { $0.envelope.contains(text) }) {
                throw StoreRefusedData("refused: \(text)")
            }
            if !messages.isEmpty { s.batches.append(messages) }
            s.fences += fences
        }
    }
    func migrate() async throws {}
    func history(route: String, before: String?, limit: Int) async throws -> HistoryPage? { HistoryPage(messages: [], more: false) }
    func position(of id: String) async throws -> (sortKey: String, route: String)? {
        state.withLockedValue { s in s.batches.joined().first { $0.id == id }.map { ($0.sortKey, $0.route) } }
    }
    func messages(after: String, below: String?, routes: RouteFilter, limit: Int) async throws -> [StoredMessage] {
        let all = state.withLockedValue { Array($0.batches.joined()) }
        let taken = all.filter { m in
            guard m.sortKey > after, below.map({ m.sortKey < $0 }) ?? true else { return false }
            switch routes {
            case .route(let r): return m.route == r
            case .under(let p): return m.route == p || m.route.hasPrefix(p + ".")
            case .any: return true
            }
        }
        return Array(taken.sorted { $0.sortKey > $1.sortKey }.prefix(limit))
    }
    func fenceWritten(_ id: String) async throws -> Bool { state.withLockedValue { $0.fences.contains(id) } }
    func conversations(user: String, uncountedTypes: [String], limit: Int) async throws -> [ConversationSummary] { [] }
    func markRead(user: String, route: String, id: String) async throws -> String? { id }
    func prune(before cutoff: Int64) async throws -> Int { 0 }
    func boundPatterns() async throws -> [String: [String]] { state.withLockedValue { $0.bound } }
    func recordBoundPatterns(queue: String, _ patterns: [String]) async throws {
        state.withLockedValue { $0.bound[queue] = patterns.isEmpty ? nil : patterns }
    }
    func ping() async throws {}
    func close() async {}
}

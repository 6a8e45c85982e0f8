import NIOConcurrencyHelpers

/// The inboxes open on this node, so that their bindings can be put back when the exchange
/// was deleted under them (``ExchangeWatch``). Held weakly: a session that went without
/// closing its inbox leaves nothing here. One lock per inbox opened or closed, none per delivery.
final class InboxRegistry: Sendable {
    private struct Entry {
        weak var inbox: InboxConsumer?
    }
    private let entries = NIOLockedValueBox<[ObjectIdentifier: Entry]>([:])

    func insert(_ inbox: InboxConsumer) {
        entries.withLockedValue { e in
            if e.count >= 1024, e.count.isMultiple(of: 1024) { e = e.filter { $0.value.inbox != nil } }
            e[ObjectIdentifier(inbox)] = Entry(inbox: inbox)
        }
    }

    func remove(_ inbox: InboxConsumer) {
        entries.withLockedValue { e in
            if e[ObjectIdentifier(inbox)]?.inbox === inbox { e[ObjectIdentifier(inbox)] = nil }
        }
    }

    /// The inboxes open now.
    var all: [InboxConsumer] { entries.withLockedValue { $0.values.compactMap(\.inbox) } }
}

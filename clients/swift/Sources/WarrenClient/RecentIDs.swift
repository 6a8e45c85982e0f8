/// The last `limit` ids handed on (an inbox redelivery of one of them is not handed on twice).
struct RecentIDs {
    private var set: Set<String> = []
    private var order: [String] = []
    private var head = 0
    let limit: Int

    init(limit: Int = 4096) { self.limit = limit }

    func contains(_ id: String) -> Bool { set.contains(id) }

    mutating func insert(_ id: String) {
        guard set.insert(id).inserted else { return }
        order.append(id)
        if set.count > limit {
            set.remove(order[head])
            head += 1
            if head > limit {
                order.removeFirst(head)
                head = 0
            }
        }
    }
}

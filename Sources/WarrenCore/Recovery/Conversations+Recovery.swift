extension Conversations {
    /// The kept messages `pattern` matches that came after the message `since`, oldest first
    /// (docs/protocol.md, "Recovery"), for a subscription whose live binding is in place: it
    /// first waits for a ``StoreFence``, so that everything routed before the binding is in
    /// the store when it is read. Not everything (``Recovery/failure``) when `since` places
    /// nothing, is past `store.max_age`, the pattern is not kept, the store does not answer, or
    /// more than `recover.max_messages` came (the newest are returned). `since` needs the
    /// rights history needs: naming a message of a route the user may not read is `forbidden`.
    public func recover(pattern: TopicPattern, since text: String, rules: AccessRules) async throws(ProtocolError) -> Recovery {
        guard let since = UUIDv7Generator.canonical(text) else { throw ProtocolError(.badFrame, "since must be a message id", ref: nil) }
        let recovery = try await find(pattern: pattern, since: since, rules: rules)
        metrics.recovered(recovery)
        return recovery
    }

    private func find(pattern: TopicPattern, since: String, rules: AccessRules) async throws(ProtocolError) -> Recovery {
        guard settings.patterns.contains(where: { (try? TopicPattern($0)).map(pattern.isContained(in:)) ?? false }) else {
            return Recovery(failure: .notStored)
        }
        guard metrics.isUp, let fence = await fence.pass() else { return Recovery(failure: .storeUnavailable) }
        // Shared by every recovery the same fence let through with the same pattern and since;
        // each asker's rights are its own.
        let read = await flights.read("\(fence) \(since) \(pattern.value)") { [self] in await readAfter(since, pattern: pattern) }
        if let route = read.sinceRoute {
            guard let route = try? TopicPattern(route), rules.canSubscribe(route) else {
                throw ProtocolError(.forbidden, "since names a message of a route you may not read", ref: nil)
            }
        }
        return read.recovery
    }

    /// Places `since` in the store, then reads what came after it.
    private func readAfter(_ since: String, pattern: TopicPattern) async -> RecoveryFlights.Read {
        let found: (sortKey: String, route: String)?
        do { found = try await ask { [store] in try await store.position(of: since) } } catch {
            return .init(recovery: Recovery(failure: .storeUnavailable, queries: 1))
        }
        let after: String
        if let found {
            after = found.sortKey
        } else {
            // Not kept (a type the store skips, say) but placed by its time: what came after
            // is kept, unless that time is older than anything the store keeps.
            let now = WallClock.milliseconds()
            guard let time = SortKey.time(of: since, now: now), let placed = SortKey.placing(id: since, now: now) else {
                return .init(recovery: Recovery(failure: .unknownID, queries: 1))
            }
            guard time >= now - Int64(settings.maxAgeSeconds) * 1000 else { return .init(recovery: Recovery(failure: .retention, queries: 1)) }
            after = placed
        }
        return .init(sinceRoute: found?.route, recovery: await scan(pattern: pattern, after: after))
    }

    /// Reads newest first, down to `after`, until more than `recover.max_messages` match.
    private func scan(pattern: TopicPattern, after: String) async -> Recovery {
        let filter = RouteFilter(pattern)
        let max = recovery.maxMessages
        let page = filter == .route(pattern.value) ? max + 1 : 500
        var found: [StoredMessage] = []
        var below: String?
        var scanned = 0
        var queries = 1
        while true {
            let rows: [StoredMessage]
            do {
                rows = try await ask { [store, below] in try await store.messages(after: after, below: below, routes: filter, limit: page) }
            } catch {
                return Recovery(failure: .storeUnavailable, queries: queries + 1)
            }
            queries += 1
            scanned += rows.count
            for row in rows where pattern.matches(validKey: row.route) && isWellFormed(row) {
                found.append(row)
                if found.count > max { return Recovery(messages: found.prefix(max).reversed(), failure: .tooMany, queries: queries) }
            }
            if rows.count < page { return Recovery(messages: found.reversed(), queries: queries) }
            if scanned >= recovery.maxScannedRows { return Recovery(messages: found.reversed(), failure: .tooMany, queries: queries) }
            below = rows.last?.sortKey
        }
    }
}

import Foundation
import WarrenBenchKit

/// The bench's output: a table for people, JSON for tools, and the issue's goals checked
/// against medians over rounds.
struct Report {
    let results: [RunResult]
    var history: [HistoryResult] = []
    var presence: [PresenceResult] = []
    var publish: [PublishResult] = []
    var recover: [RecoverResult] = []
    let options: BenchOptions

    static func line(_ r: RunResult) -> String {
        var s = String(format: "connect %.0f/s", r.connectionsPerSecond)
        if r.messages > 0 {
            s += String(format: ", %.0f deliveries/s, p50 %.2f ms, p99 %.2f ms, max %.2f ms, lost %d, dup %d",
                        r.deliveriesPerSecond, r.latencyP50Ms, r.latencyP99Ms, r.latencyMaxMs, r.lost, r.duplicates)
            s += ", CPU µs/delivery warren \(f(r.warrenCPUMicrosPerDelivery)) broker \(f(r.brokerCPUMicrosPerDelivery)) bench \(f(r.benchCPUMicrosPerDelivery))"
        } else {
            s += ", RSS/conn warren \(kb(r.warrenRSSPerConnection)) broker \(kb(r.brokerRSSPerConnection))"
            s += ", idle CPU warren \(f(r.warrenIdleCPU, 3)) broker \(f(r.brokerIdleCPU, 3))"
        }
        if r.pollAnswers > 0 { s += ", \(r.pollAnswers) poll answers" }
        if !r.errors.isEmpty { s += ", errors: \(r.errors.prefix(2))" }
        return s
    }

    static func f(_ v: Double?, _ digits: Int = 1) -> String {
        v.map { String(format: "%.\(digits)f", $0) } ?? "-"
    }

    static func kb(_ v: Double?) -> String {
        v.map { String(format: "%.1f KB", $0 / 1000) } ?? "-"
    }

    static func mib(_ s: ProcessSample?) -> String {
        s.map { String(format: "%.0f", Double($0.rssBytes) / 1_048_576) } ?? "-"
    }

    /// The median of a value over the rounds of one scenario/size/target.
    func median(_ scenario: String, _ target: Target, clients: Int? = nil, _ value: (RunResult) -> Double?) -> Double? {
        let values = results.filter { $0.scenario == scenario && $0.target == target.rawValue && (clients == nil || $0.clients == clients) }
            .compactMap(value).sorted()
        return values.isEmpty ? nil : values[values.count / 2]
    }

    /// The median of a publishing run's value over its rounds.
    func median(publish target: PublishTarget, _ value: (PublishResult) -> Double?) -> Double? {
        let values = publish.filter { $0.target == target.rawValue }.compactMap(value).sorted()
        return values.isEmpty ? nil : values[values.count / 2]
    }

    func publishTable() -> String {
        guard !publish.isEmpty else { return "" }
        var out = "\n## Publishing (clients × messages, each sent once the one before was acknowledged)\n\n"
        out += "| target | clients × msgs | msgs/s | ack p50 ms | ack p99 ms | ack max ms | acknowledged | failed | lost | CPU µs/publish warren · broker · bench |\n"
        out += "|---|---|---|---|---|---|---|---|---|---|\n"
        for r in publish {
            out += "| \(r.target) | \(r.clients) × \(r.messagesPerClient) | \(Int(r.messagesPerSecond)) | "
            out += String(format: "%.2f | %.2f | %.2f | ", r.ackP50Ms, r.ackP99Ms, r.ackMaxMs)
            out += "\(r.acknowledged) | \(r.failed) | \(r.lost) | \(Self.f(r.warrenCPUMicrosPerPublish)) · \(Self.f(r.brokerCPUMicrosPerPublish)) · \(Self.f(r.benchCPUMicrosPerPublish)) |\n"
        }
        return out
    }

    func recoverTable() -> String {
        guard !recover.isEmpty else { return "" }
        var out = "\n## Recovery (live sockets cut at once, resubscribing with since)\n\n"
        out += "| store | sockets × rooms | msg/s | expected | missed | of them by recovered sockets | dup | recovered | reasons | resubscribed s | all live s | replayed | queries/reconnect | Warren CPU µs/replayed |\n"
        out += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        for r in recover {
            out += "| \(r.store) | \(r.sockets) × \(r.rooms) | \(r.rate) | \(r.expected) | \(r.missed) | \(r.missedByRecovered) | \(r.duplicates) | \(r.recovered) | "
            out += r.reasons.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", ") + " | "
            out += String(format: "%.2f | %.2f | ", r.resubscribedSeconds, r.allLiveSeconds)
            out += "\(r.replayed) | \(Self.f(r.queriesPerReconnect, 2)) | \(Self.f(r.warrenCPUMicrosPerReplayed, 2)) |\n"
        }
        return out
    }

    func table() -> String {
        var out = publishTable() + recoverTable() + "\n## Message scenarios\n\n"
        out += "| scenario | target | clients × msgs | conn/s | deliveries/s | p50 ms | p99 ms | max ms | lost | dup | CPU µs/delivery warren · broker · bench | RSS MiB warren (before/during/after) | RSS MiB broker (before/during/after) |\n"
        out += "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        for r in results where r.messages > 0 {
            out += "| \(r.scenario) | \(r.target) | \(r.clients) × \(r.messages) | \(Int(r.connectionsPerSecond)) | \(Int(r.deliveriesPerSecond)) | "
            out += String(format: "%.2f | %.2f | %.2f | ", r.latencyP50Ms, r.latencyP99Ms, r.latencyMaxMs)
            out += "\(r.lost) | \(r.duplicates) | \(Self.f(r.warrenCPUMicrosPerDelivery)) · \(Self.f(r.brokerCPUMicrosPerDelivery)) · \(Self.f(r.benchCPUMicrosPerDelivery)) | "
            out += "\(Self.mib(r.before.warren))/\(Self.mib(r.during.warren))/\(Self.mib(r.after.warren)) | "
            out += "\(Self.mib(r.before.broker))/\(Self.mib(r.during.broker))/\(Self.mib(r.after.broker)) |\n"
        }
        let idle = results.filter { $0.messages == 0 }
        if !idle.isEmpty {
            out += "\n## Idle sockets\n\n| target | sockets | conn/s | RSS/socket warren | RSS/socket broker | idle CPU warren | idle CPU broker | RSS MiB warren (before/during/after) | RSS MiB broker (before/during/after) |\n"
            out += "|---|---|---|---|---|---|---|---|---|\n"
            for r in idle {
                out += "| \(r.target) | \(r.clients) | \(Int(r.connectionsPerSecond)) | \(Self.kb(r.warrenRSSPerConnection)) | \(Self.kb(r.brokerRSSPerConnection)) | "
                out += "\(Self.f(r.warrenIdleCPU, 4)) | \(Self.f(r.brokerIdleCPU, 4)) | "
                out += "\(Self.mib(r.before.warren))/\(Self.mib(r.during.warren))/\(Self.mib(r.after.warren)) | "
                out += "\(Self.mib(r.before.broker))/\(Self.mib(r.during.broker))/\(Self.mib(r.after.broker)) |\n"
            }
        }
        let stored = results.filter { $0.storeLagMax != nil }
        if !stored.isEmpty {
            out += "\n## The store under load\n\n| scenario | deliveries/s | max messages waiting in the store queue | drained after s |\n|---|---|---|---|\n"
            for r in stored {
                out += "| \(r.scenario) | \(Int(r.deliveriesPerSecond)) | \(r.storeLagMax ?? 0) | \(Self.f(r.storeDrainSeconds, 2)) |\n"
            }
        }
        if !history.isEmpty {
            out += "\n## History pages (50 messages)\n\n| backend | stored messages | filled in s | requests | p50 ms | p99 ms | max ms | errors |\n|---|---|---|---|---|---|---|---|\n"
            for h in history {
                out += "| \(h.backend) | \(h.stored) | \(Int(h.fillSeconds)) | \(h.requests) | "
                out += String(format: "%.2f | %.2f | %.2f | %d |\n", h.p50Ms, h.p99Ms, h.maxMs, h.errors)
            }
        }
        out += "\n## Goals (medians over rounds)\n\n"
        for goal in goals() { out += "- \(goal)\n" }
        return out
    }

    func goals() -> [String] {
        var g: [String] = []
        func verdict(_ ok: Bool) -> String { ok ? "MET" : "MISSED" }
        for mode in ["sqlite", "postgres"] {
            if let off = median("inbox-store-off", .warrenInbox, { $0.deliveriesPerSecond }),
               let on = median("inbox-store-\(mode)", .warrenInbox, { $0.deliveriesPerSecond }) {
                let lag = median("inbox-store-\(mode)", .warrenInbox, { $0.storeLagMax.map(Double.init) }) ?? -1
                let drain = median("inbox-store-\(mode)", .warrenInbox, { $0.storeDrainSeconds }) ?? -1
                g.append(String(format: "inbox with the store on %@: %.2f× the deliveries/s with it off (goal ≥ 0.9×); at most %.0f messages waiting, drained %.2f s after the last delivery — %@",
                                mode, on / off, lag, drain, verdict(on / off >= 0.9 && drain >= 0)))
            }
        }
        for p in presence {
            g.append(String(format: "presence: %d users over %d rooms on %d nodes — query p99 %.2f ms (%d errors); at rest %.2f announcements/s on the broker (%.0f B/s); node CPU at rest %@",
                            p.users, p.rooms, p.nodes, p.queryP99Ms, p.queryErrors, p.restMessagesPerSecond, p.restBytesPerSecond,
                            p.nodeIdleCPU.map { String(format: "%.4f", $0) }.joined(separator: " / ")))
        }
        if let s = median(publish: .stomp, { $0.messagesPerSecond }), let sp = median(publish: .stomp, { $0.ackP99Ms }) {
            for target in [PublishTarget.ws, .http] {
                guard let w = median(publish: target, { $0.messagesPerSecond }), let wp = median(publish: target, { $0.ackP99Ms }) else { continue }
                let lost = median(publish: target, { Double($0.lost) }) ?? -1
                let a = median(publish: .amqp, { $0.messagesPerSecond })
                g.append(String(format: "publish (%@, %d clients × %d): %.0f msgs/s vs Web-STOMP %.0f = %.2f× (plain AMQP %@), p99 publish → acknowledgement %.2f vs %.2f ms, lost %.0f (goal: ≥ 1.0×, p99 ≤ Web-STOMP's, 0 lost) — %@",
                                target.rawValue, options.publishClients, options.publishMessages, w, s, w / s, Self.f(a, 0), wp, sp, lost,
                                verdict(w >= s && wp <= sp && lost == 0)))
            }
        }
        for h in history {
            g.append(String(format: "history at %d stored messages (%@): page of 50, p99 %.2f ms over %d requests, %d errors",
                            h.stored, h.backend, h.p99Ms, h.requests, h.errors))
        }
        let rate = { (r: RunResult) -> Double? in r.deliveriesPerSecond }
        let p99 = { (r: RunResult) -> Double? in r.latencyP99Ms }
        let lost = { (r: RunResult) -> Double? in Double(r.lost) }
        if let w = median("room", .warrenWS, rate), let s = median("room", .stomp, rate),
           let wp = median("room", .warrenWS, p99), let sp = median("room", .stomp, p99) {
            let l = median("room", .warrenWS, lost) ?? -1
            g.append(String(format: "room: Warren/Web-STOMP deliveries/s = %.2f× (goal ≥ 5×), p99 %.2f vs %.2f ms = %.2f× (goal ≤ 0.5×), Warren lost %.0f — %@",
                            w / s, wp, sp, wp / sp, l, verdict(w / s >= 5 && wp <= sp / 2 && l == 0)))
            if let a = median("room", .amqp, rate) { g.append(String(format: "room: Warren/plain AMQP deliveries/s = %.2f×", w / a)) }
        }
        if let wp = median("room-paced", .warrenWS, p99), let ap = median("room-paced", .amqp, p99) {
            let sp = median("room-paced", .stomp, p99)
            g.append(String(format: "room-paced: Warren p99 %.2f ms vs plain AMQP %.2f ms + 1 ms (Web-STOMP %@ ms) — %@",
                            wp, ap, Self.f(sp, 2), verdict(wp <= ap + 1)))
        }
        for target in [Target.warrenWS, .warrenInbox] {
            if let w = median("inbox", target, rate), let a = median("inbox", .amqp, rate),
               let wp = median("inbox", target, p99), let sp = median("inbox", .stomp, p99) {
                let l = median("inbox", target, lost) ?? -1
                let s = median("inbox", .stomp, rate) ?? 0
                g.append(String(format: "inbox (%@): Warren/plain AMQP deliveries/s = %.2f× (goal ≥ 1.0×; vs Web-STOMP %.2f×), p99 %.2f vs Web-STOMP %.2f ms, lost %.0f — %@",
                                target.rawValue, w / a, s > 0 ? w / s : 0, wp, sp, l, verdict(w / a >= 1 && wp <= sp && l == 0)))
            }
        }
        if let w = median("inbox", .warrenInbox, rate), let a = median("inbox", .amqpAck, rate),
           let wp = median("inbox-paced", .warrenInbox, p99), let ap = median("inbox-paced", .amqpAck, p99) {
            let c = median("inbox", .warrenInbox, { $0.warrenCPUMicrosPerDelivery }) ?? -1
            g.append(String(format: "inbox, acked both sides: warren-inbox/amqp-ack deliveries/s = %.2f× (goal ≥ 1.0×), inbox-paced p99 %.2f vs %.2f ms (goal ≤), Warren CPU per inbox delivery %.1f µs (goal ≤ 40) — %@",
                            w / a, wp, ap, c, verdict(w >= a && wp <= ap && c >= 0 && c <= 40)))
        }
        if let wp = median("inbox-paced", .warrenWS, p99), let sp = median("inbox-paced", .stomp, p99) {
            let ap = median("inbox-paced", .amqp, p99)
            g.append(String(format: "inbox-paced (%d msg/s, load every target carries): p99 Warren %.2f ms vs Web-STOMP %.2f ms (plain AMQP %@ ms), Warren lost %.0f — %@",
                            options.inboxPacedRate, wp, sp, Self.f(ap, 2), median("inbox-paced", .warrenWS, lost) ?? -1,
                            verdict(wp <= sp)))
        }
        let sizes = Set(results.filter { $0.scenario == "idle" }.map(\.clients)).sorted()
        for n in sizes {
            if let w = median("idle", .warrenWS, clients: n, { r in
                   (r.warrenRSSPerConnection ?? 0) + max(0, r.brokerRSSPerConnection ?? 0) }),
               let s = median("idle", .stomp, clients: n, { $0.brokerRSSPerConnection }), s > 0 {
                let judged = n == 10_000 ? verdict(w / s <= 0.25) : "for reference (the goal is at 10,000)"
                g.append(String(format: "idle %d: Warren + broker %.1f KB per socket vs Web-STOMP %.1f KB = %.3f× (goal ≤ 0.25× at 10,000) — %@",
                                n, w / 1000, s / 1000, w / s, judged))
            }
        }
        for door in [Target.warrenPollNIO, .warrenPollBase] {
            if let l = median("poll", door, lost), let p = median("poll", door, p99), let np = median("poll", .nchan, p99) {
                g.append(String(format: "poll (%@): lost %.0f, p99 %.1f ms = %.2f× Nchan's", door.rawValue, l, p, p / np))
            }
        }
        if let l = median("poll", .warrenPoll, lost), let p = median("poll", .warrenPoll, p99) {
            let np = median("poll", .nchan, p99), mp = median("poll", .nchanMulti, p99)
            g.append(String(format: "poll (%d long-pollers, %d msg/s): Warren lost %.0f, p99 %.1f ms vs Nchan %@ ms = %@× (multi %@ ms) (goal: 0 lost, p99 ≤ 1.10× Nchan's) — %@",
                            options.pollClients, options.pollRate, l, p, Self.f(np), Self.f(np.map { p / $0 }, 2), Self.f(mp),
                            verdict(l == 0 && p <= (np ?? 0) * 1.10)))
            let cpu = { (r: RunResult) -> Double? in r.warrenCPUMicrosPerAnswer }
            if let c = median("poll", .warrenPoll, cpu) {
                let nc = median("poll", .nchan, cpu)
                g.append(String(format: "poll: Warren CPU per answer %.1f µs (Nchan's nginx %@ µs) (goal ≤ 40 µs) — %@", c, Self.f(nc), verdict(c <= 40)))
                if let n = median("poll", .warrenPollNIO, cpu) {
                    g.append(String(format: "poll doors: CPU per answer on the epoll door %.1f µs vs NIO's channels %.1f µs = %.2f× (the epoll door is kept only at ≤ 0.85×: ≥ 15 %% less) — %@",
                                    c, n, c / n, verdict(c <= n * 0.85)))
                }
                if let b = median("poll", .warrenPollBase, cpu) {
                    g.append(String(format: "poll builds: CPU per answer %.1f µs vs the baseline build's %.1f µs = %.2f× (goal ≤ 1.15×) — %@",
                                    c, b, c / b, verdict(c <= b * 1.15)))
                }
            }
        }
        if let l = median("sse", .warrenSSE, lost), let p = median("sse", .warrenSSE, p99), let np = median("sse", .nchanSSE, p99) {
            let pp = median("sse", .warrenPoll, p99)
            let c = median("sse", .warrenSSE, { $0.warrenCPUMicrosPerDelivery })
            g.append(String(format: "sse (%d readers, %d msg/s): Warren lost %.0f, p99 %.1f ms vs Nchan's EventSource %.1f ms = %.2f× (Warren's long-polling %@ ms) (goal: 0 lost, p99 ≤ Nchan's), Warren CPU per delivery %@ µs — %@",
                            options.pollClients, options.pollRate, l, p, np, p / np, Self.f(pp), Self.f(c, 2),
                            verdict(l == 0 && p <= np)))
        }
        for r in recover {
            g.append(String(format: "recover (%@, %d live sockets in %d rooms at %d msg/s, all cut, resubscribed with since): missed %d (%d by sockets answered recovered), duplicates %d, recovered %d of %d, every socket live %.1f s after the cut, %.2f store queries per reconnect, Warren CPU %@ µs per replayed message (goal: nothing missed by a socket answered recovered, nothing twice) — %@",
                            r.store, r.sockets, r.rooms, r.rate, r.missed, r.missedByRecovered, r.duplicates, r.recovered, r.sockets, r.allLiveSeconds,
                            r.queriesPerReconnect, Self.f(r.warrenCPUMicrosPerReplayed, 2),
                            verdict(r.missedByRecovered == 0 && r.duplicates == 0 && r.publishFailures == 0)))
        }
        if let w = median("poll-burst", .warrenPoll, rate), let m = median("poll-burst", .nchanMulti, rate) {
            let n = median("poll-burst", .nchan, rate)
            g.append(String(format: "poll-burst (%d × %d unpaced): Warren %.0f deliveries/s vs Nchan multi %.0f = %.2f× (Nchan one-per-answer %@) (goal ≥ 1.0×), Warren lost %.0f — %@",
                            options.pollClients, options.pollBurstMessages, w, m, w / m, Self.f(n, 0),
                            median("poll-burst", .warrenPoll, lost) ?? -1, verdict(w >= m)))
        }
        if let w = median("poll-idle", .warrenPoll, { $0.warrenRSSPerConnection }) {
            let n = median("poll-idle", .nchan, { $0.warrenRSSPerConnection })
            g.append(String(format: "poll-idle (%d parked long-polls): Warren %.1f KB per parked poll (Nchan %@ KB) (goal ≤ 16 KB) — %@",
                            options.pollIdleClients, w / 1000, n.map { String(format: "%.1f", $0 / 1000) } ?? "-", verdict(w <= 16_000)))
        }
        if let c50 = median("greedy-calm", .warrenWS, { $0.latencyP50Ms }), let g50 = median("greedy", .warrenWS, { $0.latencyP50Ms }),
           let c99 = median("greedy-calm", .warrenWS, p99), let g99 = median("greedy", .warrenWS, p99) {
            g.append(String(format: "greedy: two ordinary sockets beside a flooder, a hoarder, a non-reader and a connection storm: p50 %.2f vs %.2f ms alone = %.2f×, p99 %.2f vs %.2f ms = %.2f×, lost %.0f (a measurement, no goal)",
                            g50, c50, g50 / c50, g99, c99, g99 / c99, median("greedy", .warrenWS, lost) ?? -1))
        }
        for target in [Target.warrenInbox, .warrenPoll] {
            if let l = median("scale", target, lost), let d = median("scale", target, { Double($0.delivered) }) {
                g.append(String(format: "scale (%@, %d clients each given a message): delivered %.0f, lost %.0f — %@",
                                target.rawValue, options.scaleClients, d, l, verdict(l == 0)))
            }
        }
        return g
    }

    func json() throws -> Data {
        struct Document: Encodable {
            var date: String
            var machine: String
            var results: [RunResult]
            var history: [HistoryResult]
            var presence: [PresenceResult]
            var publish: [PublishResult]
            var recover: [RecoverResult]
            var goals: [String]
        }
        let doc = Document(date: ISO8601DateFormatter().string(from: Date()),
                           machine: "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory / 1_073_741_824) GiB",
                           results: results, history: history, presence: presence, publish: publish, recover: recover, goals: goals())
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(doc)
    }
}

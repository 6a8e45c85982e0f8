import NIOCore

/// A short-lived channel used during recovery to replay declarations; reopened
/// after an entity fails with a channel error, so one failure costs only that entity.
struct RecoveryChannel {
    let connection: AMQPConnection
    let link: AMQPConnection.Link
    let reservedIDs: Set<UInt16>
    var id: UInt16?

    init(connection: AMQPConnection, link: AMQPConnection.Link, reservedIDs: Set<UInt16>) {
        self.connection = connection
        self.link = link
        self.reservedIDs = reservedIDs
    }

    mutating func run(_ entity: String, _ body: (UInt16) async throws -> Void) async throws {
        let id = try await ensureOpen()
        let started = ContinuousClock.now
        defer { connection.reportSlowRecoveryStep(entity, since: started) }
        do {
            try await body(id)
        } catch let error as AMQPError where !AMQPConnection.isLinkFailure(error) {
            connection.reportRecoveryFailure(entity, error)
            self.id = nil // the channel error closed it
        }
    }

    private mutating func ensureOpen() async throws -> UInt16 {
        if let id { return id }
        let max = link.params.channelMax == 0 ? UInt16.max : link.params.channelMax
        guard let free = (1...max).first(where: { !reservedIDs.contains($0) }) else { throw AMQPError.channelLimitReached(max) }
        _ = try await connection.send(.openChannel(free, link.channel.eventLoop.makePromise()), on: link)
        id = free
        return free
    }

    mutating func close() async throws {
        guard let id else { return }
        _ = try await connection.send(.closeChannel(id, link.channel.eventLoop.makePromise()), on: link)
        self.id = nil
    }
}

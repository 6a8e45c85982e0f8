import NIOCore

/// The greedy clients of one run: a flooder, a subscription hoarder, a socket that never
/// reads, and a connection storm (one user holding its 20 sockets and asking for more).
final class Abuse: @unchecked Sendable {
    var channels: [any Channel] = []
    var storm: RepeatedTask?

    func stop() async {
        storm?.cancel()
        for channel in channels { try? await channel.close() }
    }
}

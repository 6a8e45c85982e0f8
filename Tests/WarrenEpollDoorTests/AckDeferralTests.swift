#if os(Linux)
import Glibc
import Testing
@testable import WarrenEpollDoor

/// A poller's socket put in delayed-ACK mode before each answer (``AckDeferral``), on a real
/// loopback TCP connection.
@Suite("Delayed acknowledgements on the epoll door")
struct AckDeferralTests {
    @Test func aSocketAcknowledgesAtOnceUntilTheNextAcknowledgementIsDeferred() throws {
        let (client, server) = try Self.connectedPair()
        defer { close(client); close(server) }
        #expect(AckDeferral.acksAtOnce(server) == true, "a new connection acknowledges at once")
        AckDeferral.deferNext(on: server)
        #expect(AckDeferral.acksAtOnce(server) == false)
        #expect(AckDeferral.acksAtOnce(client) == true, "only the socket it was set on")
    }

    @Test func aSocketThatIsNotTCPCannotTell() {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        AckDeferral.deferNext(on: fds[0])
        #expect(AckDeferral.acksAtOnce(fds[0]) == nil)
    }

    /// A client socket connected to a listener on 127.0.0.1, and the accepted socket.
    private static func connectedPair() throws -> (client: Int32, server: Int32) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                guard bind(listener, sa, length) == 0, listen(listener, 1) == 0, getsockname(listener, sa, &length) == 0 else {
                    throw SocketFailure(errno: errno)
                }
            }
        }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) }
        }
        guard connected == 0 else { throw SocketFailure(errno: errno) }
        let server = accept(listener, nil, nil)
        guard server >= 0 else { throw SocketFailure(errno: errno) }
        return (client, server)
    }

    struct SocketFailure: Error { let errno: Int32 }
}
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A client on a plain non-blocking socket that pipelines a great many requests and reads
/// nothing until told: the hostile client that once stalled an event loop and made Warren hold
/// its answers without bound. It sends what the kernel takes, so it can tell when the server
/// stopped reading (its send queue stays full), then reads every answer while it sends the rest.
final class PipeliningClient {
    private let fd: Int32
    private var pending: [UInt8]
    /// Bytes sent so far.
    private(set) var sent = 0
    let total: Int

    /// Connects with a small receive buffer (`receiveBuffer`), so the server's writes fill it soon.
    init(port: Int, requests: [UInt8], receiveBuffer: Int32 = 4096) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(description: "socket: errno \(errno)") }
        var size = receiveBuffer
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw SocketError(description: "connect: errno \(errno)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.fd = fd
        pending = requests
        total = requests.count
    }

    deinit { close(fd) }

    /// Sends until the kernel takes nothing more for `patience` in a row: true when all was
    /// sent, false when the server stopped taking it (it stopped reading).
    func sendUntilStuck(patience: Int32 = 2_000) -> Bool {
        while sent < total {
            if sendSome() { continue }
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&ready, 1, patience) == 0 { return false }
        }
        return true
    }

    /// Reads every answer and sends what is left, until the server closes; returns how many
    /// times `marker` appeared in what was read.
    func readAll(counting marker: String) throws -> Int {
        let needle = Array(marker.utf8)
        var count = 0
        var tail: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            var ready = pollfd(fd: fd, events: Int16(POLLIN) | (sent < total ? Int16(POLLOUT) : 0), revents: 0)
            guard poll(&ready, 1, 30_000) > 0 else { throw SocketError(description: "no answer for 30 s after \(count) answers") }
            if ready.revents & Int16(POLLOUT) != 0 { _ = sendSome() }
            guard ready.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return count }
            if n < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                throw SocketError(description: "recv: errno \(errno) after \(count) answers")
            }
            // The marker may be split across reads: search the last bytes of the one before too.
            let chunk = tail + buffer[0..<n]
            var i = 0
            while i + needle.count <= chunk.count {
                if chunk[i] == needle[0], Array(chunk[i..<(i + needle.count)]) == needle {
                    count += 1
                    i += needle.count
                } else {
                    i += 1
                }
            }
            // (The marker does not overlap itself, so a match never starts in what was counted.)
            tail = Array(chunk.suffix(needle.count - 1))
        }
    }

    /// One `send` of what is left; false when the kernel took nothing.
    private func sendSome() -> Bool {
        let n = pending.withUnsafeBytes { send(fd, $0.baseAddress! + sent, total - sent, Int32(MSG_NOSIGNAL)) }
        guard n > 0 else { return false }
        sent += n
        return true
    }
}

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain blocking HTTP/1.1 client for loopback: what the bench asks of Warren outside the
/// measured clients (readiness, history pages).
enum LoopbackHTTP {
    /// The status code of a GET, or nil when nothing answers.
    static func status(port: Int, path: String) -> Int? {
        let (status, _) = get(port: port, path)
        return status == 0 ? nil : status
    }

    /// Where the response head ends (the index of its blank line).
    static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// A plain HTTP/1.1 GET on loopback (one connection each): the status and the whole response.
    static func get(port: Int, _ target: String) -> (Int, String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return (0, "") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return (0, "") }
        let request = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var expected: Int?
        while expected.map({ response.count < $0 }) ?? true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 65_536, 0) }
            if n <= 0 { break }
            response += buffer[0..<n]
            if expected == nil, let end = Self.headerEnd(response) {
                let head = String(decoding: response[..<end], as: UTF8.self).lowercased()
                let length = head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
                expected = end + 4 + (length ?? 0)
            }
        }
        guard response.count >= 12 else { return (0, "") }
        return (Int(String(decoding: response[9..<12], as: UTF8.self)) ?? 0, String(decoding: response, as: UTF8.self))
    }
}

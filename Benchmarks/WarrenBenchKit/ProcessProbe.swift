#if canImport(Glibc)
import Glibc
#endif

/// Resident memory and CPU time of one process, read from `/proc` (Linux).
public struct ProcessSample: Codable, Equatable, Sendable {
    /// Resident set size, bytes.
    public var rssBytes: Int
    /// User plus system CPU time, seconds.
    public var cpuSeconds: Double

    public init(rssBytes: Int, cpuSeconds: Double) {
        self.rssBytes = rssBytes
        self.cpuSeconds = cpuSeconds
    }
}

/// Reads ``ProcessSample``s of a process: Warren, the broker, or the bench itself.
public struct ProcessProbe: Sendable {
    public let pid: Int32
    /// Also counts the process's children (nginx's workers): RSS and CPU summed.
    public let withChildren: Bool

    public init(pid: Int32, withChildren: Bool = false) {
        self.pid = pid
        self.withChildren = withChildren
    }

    /// The bench's own process.
    public static var current: ProcessProbe { ProcessProbe(pid: getpid()) }

    /// The RabbitMQ node: the `beam.smp` process whose command line names RabbitMQ.
    public static func broker() -> ProcessProbe? {
        for pid in processIDs() {
            guard let cmdline = readFile("/proc/\(pid)/cmdline") else { continue }
            if cmdline.contains("beam.smp"), cmdline.contains("rabbit") { return ProcessProbe(pid: pid) }
        }
        return nil
    }

    /// Nil once the process is gone.
    public func sample() -> ProcessSample? {
        guard var total = Self.sample(pid) else { return nil }
        guard withChildren else { return total }
        for child in Self.processIDs() where child != pid && Self.parent(of: child) == pid {
            guard let s = Self.sample(child) else { continue }
            total.rssBytes += s.rssBytes
            total.cpuSeconds += s.cpuSeconds
        }
        return total
    }

    static func parent(of pid: Int32) -> Int32? {
        guard let stat = readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
    }

    static func sample(_ pid: Int32) -> ProcessSample? {
        guard let stat = Self.readFile("/proc/\(pid)/stat"), let status = Self.readFile("/proc/\(pid)/status") else {
            return nil
        }
        // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var rss = 0
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            rss = (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0) * 1024
        }
        return ProcessSample(rssBytes: rss, cpuSeconds: (utime + stime) / ticks)
    }

    static func processIDs() -> [Int32] {
        guard let dir = opendir("/proc") else { return [] }
        defer { closedir(dir) }
        var pids: [Int32] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let pid = Int32(name) { pids.append(pid) }
        }
        return pids
    }

    /// A whole small file (`/proc` files report size 0, so read until EOF); NULs become spaces.
    static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4096) }
            if n <= 0 { break }
            bytes.append(contentsOf: chunk[0..<n].map { $0 == 0 ? 32 : $0 })
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

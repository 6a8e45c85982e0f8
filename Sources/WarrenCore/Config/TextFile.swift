import Foundation

/// A text file the configuration names (bridge.toml itself, `auth.secret_file`, the PEM key
/// files), read whole. Read through a file handle rather than `String(contentsOfFile:)`, which on
/// Linux refuses anything that is not a regular file with "you don't have permission": a
/// configuration given as `--config <(envsubst < bridge.toml.in)`, `/dev/stdin` or `/dev/null`
/// (embedded defaults only) is a pipe or a device, and is read like any other file.
public enum TextFile {
    /// The file's contents as UTF-8; else why not, in the system's words ("No such file or
    /// directory", "Is a directory", "Permission denied", "not UTF-8 text").
    public static func read(_ path: String) -> Result<String, Failure> {
        var data = Data()
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            // Up to a bound: a device that never ends (`/dev/zero`, `/dev/urandom` named as a
            // secret file) is refused, not read until memory runs out.
            while let chunk = try handle.read(upToCount: 64 << 10), !chunk.isEmpty {
                data.append(chunk)
                guard data.count <= limit else { return .failure(Failure(reason: "longer than \(limit >> 20) MiB: not a configuration file")) }
            }
        } catch {
            return .failure(Failure(reason: reason(error)))
        }
        guard let text = String(data: data, encoding: .utf8) else { return .failure(Failure(reason: "not UTF-8 text")) }
        return .success(text)
    }

    /// The most a configuration file or key file may hold.
    public static let limit = 16 << 20

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var reason: String
        public var description: String { reason }
    }

    /// The POSIX error under Foundation's (whose own text for most of them is "The operation
    /// could not be completed").
    private static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
        return ns.localizedDescription
    }
}

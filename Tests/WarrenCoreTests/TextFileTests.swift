import Foundation
import Testing
@testable import WarrenCore

/// The configuration's files are read whole whatever kind of file they are: a pipe
/// (`--config <(envsubst < bridge.toml.in)`), standard input, `/dev/null`. Foundation's
/// `String(contentsOfFile:)` refused all three on Linux, saying "you don't have permission".
@Suite("Files the configuration names")
struct TextFileTests {
    @Test func readsAPipeAndADevice() throws {
        #expect(try TextFile.read("/dev/null").get() == "")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("warren-textfile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("bridge.toml").path
        #expect(mkfifo(fifo, 0o600) == 0)
        // The writer blocks in open until the reader opens the other end.
        let writer = Thread {
            if let handle = FileHandle(forWritingAtPath: fifo) {
                handle.write(Data("[http]\nlisten = \"127.0.0.1:9\"\n".utf8))
                try? handle.close()
            }
        }
        writer.start()
        #expect(try TextFile.read(fifo).get() == "[http]\nlisten = \"127.0.0.1:9\"\n")
    }

    @Test func saysWhyAFileCannotBeRead() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("warren-textfile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let binary = dir.appendingPathComponent("key.der")
        try Data([0xff, 0xfe, 0x00, 0x80]).write(to: binary)
        #expect(reason(dir.path) == "Is a directory")
        #expect(reason(dir.appendingPathComponent("missing").path) == "No such file or directory")
        #expect(reason(binary.path) == "not UTF-8 text")
        #expect(reason("/dev/zero") == "longer than 16 MiB: not a configuration file")
        // Through the configuration: the key, then the file and the reason.
        let error = #expect(throws: ConfigError.self) {
            try BridgeConfiguration.parse("[auth]\nmode = \"token\"\nsecret_file = \"\(dir.path)\"\n", environment: [:])
        }
        #expect(error?.description.contains("auth.secret_file") == true, "\(String(describing: error))")
        #expect(error?.description.contains("cannot read \(dir.path): Is a directory") == true, "\(String(describing: error))")
    }

    private func reason(_ path: String) -> String? {
        if case .failure(let failure) = TextFile.read(path) { return failure.reason }
        return nil
    }
}

import Foundation
import HummingbirdWSClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOWebSocket
import WarrenCore

/// A real WebSocket client (swift-websocket's) speaking Warren's JSON frames.
final class TestSocket: Sendable {
    private let task: Task<WebSocketCloseFrame?, Error>
    let name: String

    /// With `tls`, the socket is `wss://` and trusts what `tls` says.
    static func connect(port: Int, query: String, name: String? = nil, tls: TLSConfiguration? = nil) async throws -> TestSocket {
        let ready = Mailbox<Bool>()
        let frames = Mailbox<JSONValue>()
        let writerBox = NIOLockedValueBox<WebSocketOutboundWriter?>(nil)
        var logger = Logger(label: "test-ws")
        logger.logLevel = .critical
        let task = Task<WebSocketCloseFrame?, Error> {
            defer { Task { await ready.append(false); await frames.finish() } }
            return try await WebSocketClient.connect(
                // TLS by name: an IP address cannot be sent as SNI, and the certificate names localhost too.
                url: tls == nil ? "ws://127.0.0.1:\(port)/v1/ws?\(query)" : "wss://localhost:\(port)/v1/ws?\(query)",
                configuration: .init(maxFrameSize: 4 << 20, autoPing: .disabled),
                tlsConfiguration: tls,
                logger: logger
            ) { inbound, outbound, _ in
                writerBox.withLockedValue { $0 = outbound }
                await ready.append(true)
                for try await message in inbound.messages(maxSize: 16 << 20) {
                    guard case .text(let text) = message, let json = try? JSONParser.parse(text) else { continue }
                    await frames.append(json)
                }
            }
        }
        guard await ready.next(timeout: .seconds(20)) == true else {
            task.cancel()
            throw SocketError(description: "WebSocket to port \(port) with \(query) did not open")
        }
        let socket = TestSocket(name: name ?? query, task: task, frames: frames, writer: writerBox)
        return socket
    }

    private init(name: String, task: Task<WebSocketCloseFrame?, Error>, frames: Mailbox<JSONValue>,
                 writer: NIOLockedValueBox<WebSocketOutboundWriter?>) {
        self.name = name
        self.task = task
        self.framesBox = frames
        self.writerBox = writer
    }

    private let framesBox: Mailbox<JSONValue>
    private let writerBox: NIOLockedValueBox<WebSocketOutboundWriter?>

    func send(_ text: String) async throws {
        guard let w = writerBox.withLockedValue({ $0 }) else { throw SocketError(description: "not open") }
        try await w.write(.text(text))
    }

    /// Frames skipped by `next(op:)`, handed out first by later calls (nothing is lost).
    private let stash = NIOLockedValueBox<[JSONValue]>([])

    /// The next frame from Warren (nil on timeout or close).
    func next(timeout: Duration = .seconds(20)) async -> JSONValue? {
        if let first = stash.withLockedValue({ $0.isEmpty ? nil : $0.removeFirst() }) { return first }
        return await framesBox.next(timeout: timeout)
    }

    /// The next frame with `op`; frames of other kinds stay queued for later calls.
    func next(op: String, timeout: Duration = .seconds(20)) async throws -> JSONValue {
        guard let f = await next(timeout: timeout, where: { $0["op"]?.stringValue == op }) else {
            // What came instead (an `error` frame, say) says why.
            let passed = stash.withLockedValue { $0.suffix(5).map { "\($0)" }.joined(separator: "; ") }
            throw SocketError(description: "\(name): no '\(op)' frame within \(timeout)" + (passed.isEmpty ? "" : "; frames passed over: \(passed)"))
        }
        return f
    }

    /// The next frame that `matches` (frames passed over are kept for later calls), or nil on timeout.
    func next(timeout: Duration = .seconds(20), where matches: (JSONValue) -> Bool) async -> JSONValue? {
        if let hit = stash.withLockedValue({ s -> JSONValue? in
            guard let i = s.firstIndex(where: matches) else { return nil }
            return s.remove(at: i)
        }) { return hit }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let f = await framesBox.next(timeout: deadline - ContinuousClock.now) else { break }
            if matches(f) { return f }
            stash.withLockedValue { $0.append(f) }
        }
        return nil
    }

    /// Sends a frame and returns the next frame with `op`.
    func request(_ text: String, expect op: String) async throws -> JSONValue {
        try await send(text)
        return try await next(op: op)
    }

    func subscribe(_ id: String, _ pattern: String, mode: String = "live") async throws {
        let answer = try await request(#"{"op":"sub","id":"\#(id)","pattern":"\#(pattern)","mode":"\#(mode)"}"#, expect: "subscribed")
        guard answer["id"]?.stringValue == id else { throw SocketError(description: "unexpected \(answer)") }
    }

    /// Closes from the client side and returns the close code Warren answered with, if any.
    @discardableResult
    func close() async -> UInt16? {
        if let w = writerBox.withLockedValue({ $0 }) { try? await w.close(.normalClosure, reason: nil) }
        return await closeCode()
    }

    /// Waits (at most `timeout`) for the connection to end and returns the server's close code.
    func closeCode(timeout: Duration = .seconds(30)) async -> UInt16? {
        let task = self.task
        let ended = Mailbox<WebSocketCloseFrame?>()
        // An unstructured waiter: `task.value` ignores cancellation, so it must not hold up the timeout.
        Task { await ended.append((try? await task.value) ?? nil) }
        guard let frame = await ended.next(timeout: timeout) ?? nil else { return nil }
        return Self.code(frame.closeCode)
    }

    static func code(_ c: WebSocketErrorCode) -> UInt16 {
        var buffer = ByteBuffer()
        buffer.write(webSocketErrorCode: c)
        return buffer.readInteger(as: UInt16.self) ?? 0
    }
}


import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A deliberately bad WebSocket client: it does the upgrade by hand and then reads
/// nothing until asked to, so the server sees a peer that stopped reading.
final class RawWebSocket: Sendable {
    let channel: any Channel
    private let inbound: NIOLockedValueBox<ByteBuffer>
    private let ended: Mailbox<Bool>

    private init(channel: any Channel, inbound: NIOLockedValueBox<ByteBuffer>, ended: Mailbox<Bool>) {
        self.channel = channel
        self.inbound = inbound
        self.ended = ended
    }

    final class Collect: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let box: NIOLockedValueBox<ByteBuffer>
        let ended: Mailbox<Bool>
        init(box: NIOLockedValueBox<ByteBuffer>, ended: Mailbox<Bool>) {
            self.box = box
            self.ended = ended
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var b = unwrapInboundIn(data)
            _ = box.withLockedValue { $0.writeBuffer(&b) }
        }
        func channelInactive(context: ChannelHandlerContext) {
            let ended = self.ended
            Task { await ended.append(true) }
        }
    }

    /// Connects and sends the handshake, with `then` written in the same packet right behind it.
    static func connect(port: Int, query: String, then: ByteBuffer = ByteBuffer()) async throws -> RawWebSocket {
        let box = NIOLockedValueBox(ByteBuffer())
        let ended = Mailbox<Bool>()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.autoRead, value: false)
            .channelOption(.socketOption(.so_rcvbuf), value: 4096)
            .channelInitializer { $0.pipeline.addHandler(Collect(box: box, ended: ended)) }
            .connect(host: "127.0.0.1", port: port).get()
        let request = "GET /v1/ws?\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        var bytes = ByteBuffer(string: request)
        var then = then
        bytes.writeBuffer(&then)
        try await channel.writeAndFlush(bytes)
        return RawWebSocket(channel: channel, inbound: box, ended: ended)
    }

    /// Sends one masked text frame.
    func sendText(_ text: String) async throws {
        try await sendFrame(opcode: 0x1, Array(text.utf8))
    }

    /// Sends one frame as it is told: any opcode, final or not, masked or not.
    func sendFrame(opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true) async throws {
        try await channel.writeAndFlush(Self.frame(opcode: opcode, payload, fin: fin, masked: masked))
    }

    static func frame(opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true) -> ByteBuffer {
        var frame = ByteBuffer()
        frame.writeInteger(UInt8((fin ? 0x80 : 0) | opcode))
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            frame.writeInteger(UInt8(maskBit | UInt8(payload.count)))
        } else if payload.count <= Int(UInt16.max) {
            frame.writeInteger(UInt8(maskBit | 126))
            frame.writeInteger(UInt16(payload.count))
        } else {
            frame.writeInteger(UInt8(maskBit | 127))
            frame.writeInteger(UInt64(payload.count))
        }
        guard masked else {
            frame.writeBytes(payload)
            return frame
        }
        let mask: [UInt8] = [1, 2, 3, 4]
        frame.writeBytes(mask)
        frame.writeBytes(payload.enumerated().map { $0.element ^ mask[$0.offset % 4] })
        return frame
    }

    /// Reads (or stops reading) from now on.
    func reading(_ on: Bool) async throws {
        do {
            try await channel.setOption(.autoRead, value: on).get()
        } catch ChannelError.ioOnClosedChannel {
            return  // the server closed it already: what it sent was read
        }
        if on { channel.read() }
    }

    /// The server's text frames' payloads and its close code so far (after the HTTP answer).
    func received() -> (texts: [String], close: UInt16?) {
        var data = inbound.withLockedValue { $0 }
        guard let headerEnd = data.readableBytesView.firstRange(of: Array("\r\n\r\n".utf8)) else { return ([], nil) }
        data.moveReaderIndex(to: headerEnd.upperBound)
        var texts: [String] = []
        var close: UInt16?
        while data.readableBytes >= 2 {
            let b0 = data.readInteger(as: UInt8.self)!
            let b1 = data.readInteger(as: UInt8.self)!
            var length = Int(b1 & 0x7F)
            if length == 126 { guard let l = data.readInteger(as: UInt16.self) else { break }; length = Int(l) }
            else if length == 127 { guard let l = data.readInteger(as: UInt64.self) else { break }; length = Int(l) }
            guard let payload = data.readSlice(length: length) else { break }
            switch b0 & 0x0F {
            case 0x1: texts.append(String(buffer: payload))
            case 0x8: close = payload.getInteger(at: payload.readerIndex, as: UInt16.self)
            default: break
            }
        }
        return (texts, close)
    }

    /// Reads until a text frame satisfies `done`, a close frame comes, or `timeout`.
    func read(until done: (String) -> Bool, timeout: Duration = .seconds(60)) async throws -> (texts: [String], close: UInt16?) {
        try await reading(true)
        let deadline = ContinuousClock.now + timeout
        while true {
            let seen = received()
            if seen.close != nil || seen.texts.contains(where: done) || ContinuousClock.now > deadline { return seen }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Starts reading and returns the close code of the server's close frame (nil if none came).
    func readUntilClose() async throws -> UInt16? {
        try await reading(true)
        _ = await ended.next(timeout: .seconds(60))
        return received().close
    }
}

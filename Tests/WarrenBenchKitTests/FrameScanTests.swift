import NIOCore
import Testing
@testable import WarrenBenchKit

/// The bench's frame readers: a miscount here would be reported as loss or latency.
@Suite struct FrameScanTests {
    @Test func stampRoundTrips() {
        var buffer = ByteBuffer()
        Stamp(seq: 1234, sentNanos: 98_765_432_101).write(to: &buffer)
        #expect(String(buffer: buffer) == "1234.98765432101")
        #expect(buffer.withUnsafeReadableBytes { Stamp.parse($0, from: 0) } == Stamp(seq: 1234, sentNanos: 98_765_432_101))
    }

    @Test func foreignBodiesAreNotStamps() {
        for text in ["", "hello", "12", "12.", ".5", "x1.2"] {
            let parsed = ByteBuffer(string: text).withUnsafeReadableBytes { Stamp.parse($0, from: 0) }
            #expect(parsed == nil, "\(text)")
        }
    }

    @Test func warrenMessageFrame() {
        let frame = #"{"op":"msg","sub":"s","env":{"v":1,"id":"0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e","route":"room.x","type":"raw","from":"amqp","via":"amqp","ts":1,"body":"7.123"}}"#
        let scanned = ByteBuffer(string: frame).withUnsafeReadableBytes { WarrenFrame.scan($0, wantID: true) }
        #expect(scanned == .message(Stamp(seq: 7, sentNanos: 123), id: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e"))
        let other = ByteBuffer(string: #"{"op":"subscribed","id":"s","pattern":"room.x","mode":"live"}"#)
        #expect(other.withUnsafeReadableBytes { WarrenFrame.scan($0, wantID: false) } == .subscribed)
        let error = ByteBuffer(string: #"{"op":"error","code":"forbidden","message":"no"}"#)
        #expect(error.withUnsafeReadableBytes { WarrenFrame.scan($0, wantID: false) } == .error(String(buffer: error)))
    }

    @Test func pollAnswerYieldsEveryStampAndTheCursor() {
        let answer = #"{"messages":[{"sub":"s","env":{"body":"1.10"}},{"sub":"s","env":{"body":{"x":1}}},{"sub":"s","env":{"body":"2.20"}}],"cursor":"abc-1"}"#
        var stamps: [Stamp?] = []
        let cursor = ByteBuffer(string: answer).withUnsafeReadableBytes { PollAnswer.scan($0) { stamps.append($0) } }
        #expect(stamps == [Stamp(seq: 1, sentNanos: 10), nil, Stamp(seq: 2, sentNanos: 20)])
        #expect(cursor == "abc-1")
        #expect(ByteBuffer(string: #"{"session":"q.r","expires_in":120}"#).withUnsafeReadableBytes { PollAnswer.session($0) } == "q.r")
    }

    @Test func stompFramesSplitAtNULAndSkipHeartbeats() {
        let wire = "\nCONNECTED\nversion:1.2\n\n\0\r\nMESSAGE\r\nsubscription:s\r\n\r\n3.30\0RECEIPT\nreceipt-id:r\n\n\0MESSAGE\nx:y\n\n4.4"
        var seen: [(StompCommand, String)] = []
        let consumed = ByteBuffer(string: wire).withUnsafeReadableBytes { bytes in
            StompScan.frames(bytes) { command, body in
                seen.append((command, String(decoding: UnsafeRawBufferPointer(rebasing: bytes[body]), as: UTF8.self)))
            }
        }
        #expect(seen.map(\.0) == [.connected, .message, .receipt])
        #expect(seen.map(\.1) == ["", "3.30", ""])
        // The unterminated last frame is left for later.
        #expect(consumed == wire.utf8.count - "MESSAGE\nx:y\n\n4.4".utf8.count)
    }

    /// `find` jumps between occurrences of the needle's rarest byte: every place it can be,
    /// from the start, the end, a given offset, and near misses.
    @Test func findFindsEveryOccurrenceAndNothingElse() {
        func all(_ text: String, from: Int = 0) -> [Int] {
            ByteBuffer(string: text).withUnsafeReadableBytes { bytes in
                var found: [Int] = []
                var at = from
                while let i = find(#""body":"#, in: bytes, from: at) {
                    found.append(i)
                    at = i + 1
                }
                return found
            }
        }
        #expect(all(#""body":"#) == [0])
        #expect(all(#"x"body":"#) == [1])
        #expect(all(#""body""body":"bod":"body":"#) == [6, 19])
        #expect(all(#"{"body":1,"body":2}"#, from: 2) == [10])
        #expect(all(#""bodyy":"body"y":"body:""#).isEmpty)
        #expect(all(#""body""#).isEmpty)
        #expect(all("").isEmpty)
        #expect(all(#""body":"#, from: 1).isEmpty)
        let bytes = Array(#"ab"body":"#.utf8)
        #expect(bytes.withUnsafeBytes { find(#""body":"#, in: UnsafeRawBufferPointer(rebasing: $0[0..<8])) } == nil,
                "the needle cut off by the end of the buffer")
    }

    @Test func pubacksAreTold() {
        let frame = ByteBuffer(string: #"{"op":"puback","cid":"c3","id":"0190a1b2-0000-7000-8000-000000000000"}"#)
        #expect(frame.withUnsafeReadableBytes { WarrenFrame.scan($0, wantID: false) } == .puback)
    }

    /// The HTTP publisher reads answers from raw bytes: whole ones only, any header case,
    /// several in one read.
    @Test func httpAnswersAreCutAtTheirLength() {
        let one = "HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\nContent-Length: 10\r\n\r\n{\"id\":\"x\"}"
        #expect(HTTPPublishHandler.response(ByteBuffer(string: one)).map { [$0.status, $0.length] } == [202, one.utf8.count])
        #expect(HTTPPublishHandler.response(ByteBuffer(string: String(one.dropLast(3)))) == nil, "the body is not all there")
        #expect(HTTPPublishHandler.response(ByteBuffer(string: "HTTP/1.1 202 Accepted\r\ncontent-le")) == nil)
        let two = ByteBuffer(string: "HTTP/1.1 429 Too Many Requests\r\nCONTENT-LENGTH: 2\r\n\r\n{}" + one)
        #expect(HTTPPublishHandler.response(two).map { [$0.status, $0.length] } == [429, two.readableBytes - one.utf8.count])
    }
}

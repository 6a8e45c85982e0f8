import Foundation
import NIOCore
import Testing
import WarrenCore
@testable import WarrenHTTP

@Suite("The poll path's responses")
struct PollResponseTests {
    @Test func anAnswerThatClosesSaysSoAndCarriesItsExtraLines() {
        let response = ResponseHead.json(status: 200, body: ByteBuffer(string: "{}"), close: true, extra: "vary: Origin")
        #expect(String(buffer: response)
            == "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nvary: Origin\r\nconnection: close\r\n\r\n{}")
    }

    @Test func aRefusalIsItsStatusItsJSONErrorAndAClose() {
        #expect(String(buffer: ResponseHead.refusal(.webSocketVersion)) == "HTTP/1.1 426 Upgrade Required\r\ncontent-type: application/json\r\n"
            + "content-length: 78\r\nsec-websocket-version: 13\r\nconnection: close\r\n\r\n"
            + #"{"error":{"code":"bad_frame","message":"only WebSocket version 13 is served"}}"#)
    }

    @Test(arguments: [0, 7, 9, 10, 99, 100, 12_345, 1_000_000, Int.max])
    func aPollAnswersHeadCarriesItsLengthInDecimal(length: Int) {
        #expect(String(buffer: ResponseHead.json(status: 200, length: length, close: false))
            == "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: \(length)\r\n\r\n")
        #expect(String(buffer: ResponseHead.json(status: 200, length: length, close: true))
            == "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: \(length)\r\nconnection: close\r\n\r\n")
    }

    @Test func otherStatusesKeepTheirReasonPhrase() {
        #expect(String(buffer: ResponseHead.json(status: 201, length: 3, close: false))
            == "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: 3\r\n\r\n")
    }

    /// The answer's body after its head, and the length the head gives.
    private func body(_ answer: PollAnswer) -> (body: String, length: Int?) {
        let whole = String(buffer: PollAnswerBody.response(answer, close: false))
        let parts = whole.components(separatedBy: "\r\n\r\n")
        let length = parts[0].components(separatedBy: "\r\n").first { $0.hasPrefix("content-length: ") }
            .flatMap { Int($0.dropFirst(16)) }
        return (parts.dropFirst().joined(separator: "\r\n\r\n"), length)
    }

    @Test(arguments: [UInt64(0), 9, 10, 4_711, UInt64.max])
    func aCursorIsWrittenFromItsNodeAndNumber(sequence: UInt64) {
        let (text, length) = body(PollAnswer(messages: [], node: "warren-1", sequence: sequence, more: true))
        #expect(text == "{\"messages\":[],\"cursor\":\"warren-1.\(sequence)\",\"more\":true}")
        #expect(length == text.utf8.count)
        #expect(PollAnswer(messages: [], node: "warren-1", sequence: sequence).cursor == "warren-1.\(sequence)")
    }

    @Test func aNodeThatNeedsEscapingIsEscapedInTheCursor() {
        let (text, length) = body(PollAnswer(messages: [], node: "a\"b\\c\u{1}é", sequence: 7))
        #expect(text == "{\"messages\":[],\"cursor\":\"a\\\"b\\\\c\\u0001é.7\"}")
        #expect(length == text.utf8.count)
    }
}

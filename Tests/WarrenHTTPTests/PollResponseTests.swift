import NIOCore
import Testing
@testable import WarrenHTTP

@Suite("The poll path's responses")
struct PollResponseTests {
    @Test func aKeepAliveHeadGainsConnectionClose() {
        var response = PollConnectionHandler.responseHead(status: 200, length: 2, close: false)
        response.writeString("{}")
        #expect(String(buffer: PollConnectionHandler.withClose(response))
            == "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
    }

    @Test(arguments: [0, 7, 9, 10, 99, 100, 12_345, 1_000_000, Int.max])
    func aPollAnswersHeadCarriesItsLengthInDecimal(length: Int) {
        #expect(String(buffer: PollConnectionHandler.responseHead(status: 200, length: length, close: false))
            == "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: \(length)\r\n\r\n")
        #expect(String(buffer: PollConnectionHandler.responseHead(status: 200, length: length, close: true))
            == "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: \(length)\r\nconnection: close\r\n\r\n")
    }

    @Test func otherStatusesKeepTheirReasonPhrase() {
        #expect(String(buffer: PollConnectionHandler.responseHead(status: 201, length: 3, close: false))
            == "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: 3\r\n\r\n")
    }
}

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
}

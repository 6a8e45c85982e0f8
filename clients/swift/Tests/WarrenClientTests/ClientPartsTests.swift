import Foundation
import Testing
@testable import WarrenClient

@Suite("The client's parts")
struct ClientPartsTests {
    /// A redelivery of one of the last ids handed on is recognised; older ids are forgotten.
    @Test func recentIDsRememberTheLastOnes() {
        var ids = RecentIDs(limit: 3)
        for id in ["a", "b", "c", "d"] { ids.insert(id) }
        #expect(!ids.contains("a"))
        #expect(ids.contains("b") && ids.contains("c") && ids.contains("d"))
        ids.insert("d")
        ids.insert("e")
        #expect(!ids.contains("b") && ids.contains("e"))
    }

    @Test func theWebSocketEndpointFollowsTheBaseURL() {
        #expect(WarrenClientConfiguration(url: URL(string: "http://127.0.0.1:8080")!).webSocketEndpoint.absoluteString == "ws://127.0.0.1:8080/v1/ws")
        #expect(WarrenClientConfiguration(url: URL(string: "https://chat.example/warren/")!).webSocketEndpoint.absoluteString
            == "wss://chat.example/warren/v1/ws")
    }

    @Test func jsonValuesRoundTrip() throws {
        let value: JSONValue = ["a": [1, true, nil, "x"], "b": ["c": .number(2.5)]]
        #expect(try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value)) == value)
    }

    /// A client closed before it ever opened answers every call `closed`.
    @Test func aClosedClientAnswersClosed() async throws {
        let client = WarrenClient(.init(url: URL(string: "http://127.0.0.1:1")!, user: "alice"))
        await client.close()
        await #expect(throws: WarrenError.closed) { _ = try await client.subscribe("room.a") }
        await #expect(throws: WarrenError.closed) { _ = try await client.publish("room.a", "hi") }
    }
}

import Foundation
import NIOCore
import Testing
@testable import WarrenHTTP

@Suite("A token's expiry on an open socket")
struct TokenExpiryDelayTests {
    /// The close timer's wait: the time left (none once past), or no timer at all for an expiry
    /// further off than a century (in milliseconds a "never" may not fit an `Int64`).
    @Test func theCloseTimerWaitsAsLongAsATimerCan() {
        let now = Date(timeIntervalSince1970: 1_763_726_400)
        #expect(WebSocketConnectionHandler.delay(until: now.addingTimeInterval(-5), now: now) == .zero)
        #expect(WebSocketConnectionHandler.delay(until: now.addingTimeInterval(10), now: now) == .seconds(10))
        #expect(WebSocketConnectionHandler.delay(until: now.addingTimeInterval(50 * 365 * 86_400), now: now) != nil)
        for never in [now.addingTimeInterval(300 * 365 * 86_400), Date(timeIntervalSince1970: 1e300), Date.distantFuture] {
            #expect(WebSocketConnectionHandler.delay(until: never, now: now) == nil, "\(never)")
        }
    }
}

import Testing
@testable import WarrenCore

@Suite struct UserLimiterTests {
    static let second: UInt64 = 1_000_000_000

    @Test func bucketAllowsTheBurstThenTheRate() {
        var bucket = TokenBucket(rate: 10, burst: 20, now: 0)
        var taken: [Bool] = []
        func take(_ n: Int, at now: UInt64) { taken.append(bucket.take(n, now: now)) }
        for _ in 0..<20 { take(1, at: 0) }
        take(1, at: 0)                        // the burst is spent
        // 0.1 s later one token is back; a multicast of two must wait for both.
        take(2, at: Self.second / 10)
        take(1, at: Self.second / 10)
        take(1, at: Self.second / 10)
        #expect(taken == Array(repeating: true, count: 20) + [false, false, true, false])
        // It never holds more than the burst, however long it rests.
        #expect(bucket.isFull(now: 100 * Self.second))
        taken = []
        for _ in 0..<21 { take(1, at: 100 * Self.second) }
        take(1, at: 0)                        // a clock going backwards changes nothing
        #expect(taken == Array(repeating: true, count: 20) + [false, false])
    }

    @Test func connectionsPerUserAreCountedApart() {
        let limiter = UserLimiter(maxConnections: 2, publishRate: 0, publishBurst: 1)
        #expect(limiter.openConnection("alice") && limiter.openConnection("alice"))
        #expect(!limiter.openConnection("alice"))
        #expect(limiter.openConnection("bob"))
        limiter.closeConnection("alice")
        #expect(limiter.openConnection("alice"))
        for _ in 0..<3 { limiter.closeConnection("alice") } // one too many: harmless
        limiter.closeConnection("bob")
        #expect(limiter.trackedUsers == 0)
        #expect(limiter.takePublishes("alice", count: 1_000_000)) // rate 0 = unlimited
    }

    @Test func publishRateIsPerUserAndForgottenWhenFull() {
        let limiter = UserLimiter(maxConnections: 0, publishRate: 5, publishBurst: 5)
        #expect(limiter.takePublishes("alice", count: 5, now: 0))
        #expect(!limiter.takePublishes("alice", count: 1, now: 0))
        #expect(limiter.takePublishes("bob", count: 5, now: 0))
        #expect(limiter.takePublishes("alice", count: 1, now: Self.second / 5))
        #expect(limiter.openConnection("alice"))
        limiter.closeConnection("alice", now: 10 * Self.second) // bucket refilled: forgotten
        #expect(limiter.trackedUsers == 1) // bob's bucket stays until it is full and he leaves
        #expect((0..<1000).allSatisfy { limiter.openConnection("u\($0)") }) // 0 = unlimited
    }

    @Test func devicesPerUserAreBoundedWithinTheInboxLifetime() {
        let book = DeviceBook(maxDevices: 2, windowMilliseconds: 1000)
        #expect(book.admit(user: "alice", device: "web", now: 0) && book.admit(user: "alice", device: "phone", now: 0))
        #expect(!book.admit(user: "alice", device: "tablet", now: 0))
        // A device in use stays admitted, and counts from its last use.
        #expect(book.admit(user: "alice", device: "web", now: 900_000_000))
        #expect(book.admit(user: "bob", device: "tablet", now: 0)) // users are counted apart
        // Once a device has gone quiet for the window (its queue expired on the broker), another may come.
        #expect(!book.admit(user: "alice", device: "tablet", now: 1_000_000_000))
        #expect(book.admit(user: "alice", device: "tablet", now: 1_000_000_001))
        #expect(!book.admit(user: "alice", device: "laptop", now: 1_000_000_001)) // web still counts
        #expect(book.admit(user: "alice", device: "laptop", now: 1_900_000_001))
        #expect(book.trackedUsers == 2)
        let unlimited = DeviceBook(maxDevices: 0, windowMilliseconds: 1000)
        #expect((0..<1000).allSatisfy { unlimited.admit(user: "alice", device: "d\($0)", now: 0) })
        #expect(unlimited.trackedUsers == 0)
    }

    /// Store requests have a bucket of their own: publishing does not spend it, nor it
    /// publishing; a user is forgotten only once both are full again.
    @Test func storeRequestsHaveABucketOfTheirOwn() {
        let limiter = UserLimiter(maxConnections: 0, publishRate: 10, publishBurst: 2, queryRate: 1, queryBurst: 3)
        #expect(limiter.takePublishes("alice", count: 2, now: 0))
        #expect((0..<4).map { _ in limiter.takeQuery("alice", now: 0) } == [true, true, true, false])
        #expect(!limiter.takePublishes("alice", count: 1, now: 0))
        #expect(limiter.takeQuery("bob", now: 0))
        // One second later the query bucket has one token back.
        #expect(limiter.takeQuery("alice", now: Self.second) && !limiter.takeQuery("alice", now: Self.second))
        #expect(limiter.openConnection("alice"))
        limiter.closeConnection("alice", now: 2 * Self.second)   // the query bucket is not full yet
        #expect(limiter.trackedUsers == 2)
        limiter.closeConnection("alice", now: 10 * Self.second)
        #expect(limiter.trackedUsers == 1)
        #expect(UserLimiter(maxConnections: 0, publishRate: 0, publishBurst: 1, queryRate: 0, queryBurst: 1).takeQuery("x"))
    }
}

import AMQPClient
import Foundation

enum FloorExit {
    /// The broker went: the measurement is over.
    static func consumerEnded(_ error: AMQPError?) -> Never {
        FileHandle.standardError.write(Data("poll-floor: the consumer ended (\(error.map { "\($0)" } ?? "cancelled"))\n".utf8))
        exit(1)
    }
}

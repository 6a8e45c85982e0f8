/// One event loop's sessions in the NIO floor server: touched only on that loop.
final class FloorLoopSessions: @unchecked Sendable {
    var handlers: [FloorHandler] = []
}

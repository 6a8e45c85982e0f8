import NIOCore
import NIOPosix

/// Gathers the acks (and nacks, rejects) written from one event-loop thread during one tick
/// and ships them at its end: one hop and one flush per connection per tick, not one per ack.
///
/// A consumer's acks usually come from other threads than its connection's (a WebSocket's
/// event loop, when its client acks): written one by one, each would cost a cross-thread hop
/// and a `write` system call on the connection. Acks are fire-and-forget in AMQP 0-9-1 and
/// keep their order on a link, which is all that is needed; they reach the broker at most one
/// tick later. Off an event loop (a task) an ack is written and flushed at once.
/// Each coalescer belongs to one thread and is touched only there, so it takes no lock.
final class AckCoalescer: @unchecked Sendable {
    private static let perThread = ThreadSpecificVariable<AckCoalescer>()

    private let loop: any EventLoop
    /// Links written on this loop during this tick, to flush at its end.
    private var toFlush: [any Channel] = []
    /// Commands for links on other loops, per link, in order.
    private var remote: [(link: any Channel, commands: [AMQPCommand])] = []
    private var scheduled = false

    private init(loop: any EventLoop) { self.loop = loop }

    /// Writes `command` to `link` (an AMQP connection's NIO channel) by the end of this tick.
    static func send(_ command: AMQPCommand, on link: any Channel) {
        guard let current = MultiThreadedEventLoopGroup.currentEventLoop else {
            return link.writeAndFlush(command, promise: nil)
        }
        let coalescer = perThread.currentValue ?? {
            let made = AckCoalescer(loop: current)
            perThread.currentValue = made
            return made
        }()
        coalescer.add(command, on: link)
    }

    private func add(_ command: AMQPCommand, on link: any Channel) {
        if link.eventLoop === loop {
            link.write(command, promise: nil)
            if !toFlush.contains(where: { $0 === link }) { toFlush.append(link) }
        } else if let i = remote.firstIndex(where: { $0.link === link }) {
            remote[i].commands.append(command)
        } else {
            remote.append((link, [command]))
        }
        if !scheduled {
            scheduled = true
            loop.execute { self.ship() }
        }
    }

    private func ship() {
        scheduled = false
        let flush = toFlush
        toFlush.removeAll(keepingCapacity: true)
        for link in flush { link.flush() }
        let batches = remote
        remote.removeAll(keepingCapacity: true)
        for (link, commands) in batches {
            link.eventLoop.execute {
                // One pass through the link's pipeline for the whole tick's commands.
                link.write(commands.count == 1 ? commands[0] : AMQPCommand.batch(commands), promise: nil)
                link.flush()
            }
        }
    }
}

// poll-floor: what a long-poll server fed through RabbitMQ costs at the least, on this machine.
//
// Not Warren: a measuring instrument for BENCHMARKS.md ("The floor under `poll`"). It speaks
// just enough of Warren's poll protocol for
// `warren-bench --scenarios poll --targets warren-poll,nchan --warren-binary .build/release/poll-floor`:
// `POST /v1/poll` makes a session that is the connection, `GET /v1/poll/…` parks until a
// message, `/readyz` answers 200; nothing is validated, no limit, ACL or cursor is kept.
// Messages come from one consumer of Warren's AMQP client (an exclusive no-ack queue bound
// with `#` to `WARREN_AMQP_EXCHANGE`) and each answer is built once per message.
//
// Two servers, each on two threads like Warren's event loops and nginx's workers:
// - by default raw epoll, `read` and `write` (``EpollWorker``); `POLL_FLOOR_WORK_NS=<n>` burns n ns
//   of CPU per poll answer there, standing in for a server's own work;
// - with `POLL_FLOOR_NIO=1`, SwiftNIO with one handler per connection (``FloorHandler``).
import AMQPClient
import Foundation
import NIOCore
import NIOPosix

let environment = ProcessInfo.processInfo.environment
let listen = environment["WARREN_HTTP_LISTEN"] ?? "127.0.0.1:8080"
let port = listen.split(separator: ":").last.flatMap { UInt16($0) } ?? 8080
let exchange = environment["WARREN_AMQP_EXCHANGE"] ?? "chat"
let configuration = try AMQPConfiguration(url: environment["WARREN_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/")

signal(SIGPIPE, SIG_IGN)
let sink: any AMQPDeliverySink
if environment["POLL_FLOOR_NIO"] == "1" {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    let loops = group.makeIterator().map { (loop: $0, sessions: FloorLoopSessions()) }
    _ = try await ServerBootstrap(group: group)
        .serverChannelOption(ChannelOptions.backlog, value: 4096)
        .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
        .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
        .childChannelInitializer { channel in
            let sessions = loops.first { $0.loop === channel.eventLoop }!.sessions
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(FloorHandler(sessions))
            }
        }
        .bind(host: "127.0.0.1", port: Int(port)).get()
    sink = NIOFloorFan(loops)
} else {
    #if os(Linux)
    let work = environment["POLL_FLOOR_WORK_NS"].flatMap { UInt64($0) } ?? 0
    let workers = (0..<2).map { _ in EpollWorker(port: port, workNanos: work) }
    for worker in workers { Thread { worker.run() }.start() }
    sink = EpollFan(workers)
    #else
    fatalError("poll-floor's epoll server is Linux's: set POLL_FLOOR_NIO=1")
    #endif
}
let connection = try await AMQPConnection.connect(configuration: configuration)
let channel = try await connection.openChannel()
try await channel.exchangeDeclare(exchange, type: "topic", durable: true)
let queue = try await channel.queueDeclare("", exclusive: true, autoDelete: true).queue
try await channel.queueBind(queue: queue, exchange: exchange, routingKey: "#")
try await channel.consume(queue: queue, noAck: true, sink: sink)
while true { sleep(3600) }

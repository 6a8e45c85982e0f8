import ArgumentParser
import Foundation
import WarrenBenchKit

/// The bench's settings (every one a command-line option).
struct BenchOptions: ParsableArguments {
    @Option(help: "Scenarios, comma-separated: room, room-paced, inbox, inbox-paced, idle, poll, poll-burst, poll-idle, sse, scale, greedy, inbox-store, history, presence, publish, recover.")
    var scenarios = "room,room-paced,inbox,inbox-paced,idle,poll,poll-burst,poll-idle,scale,greedy"
    @Option(help: "Limit the targets (comma-separated: warren-ws, warren-inbox, warren-poll, warren-poll-nio, warren-poll-base, warren-sse, web-stomp, amqp, amqp-ack, nchan, nchan-multi, nchan-sse; publish: ws-publish, http-publish, stomp-publish, amqp-publish); default: each scenario's own set.")
    var targets = ""
    @Option(help: "Rounds: every message scenario runs its targets this many times, alternating.")
    var rounds = 1
    @Option(help: "Rounds of the idle scenario (slow: thousands of connections, then the broker's clean-up).")
    var idleRounds = 1
    @Option(help: "Where to write the JSON report.")
    var json = "warren-bench.json"

    @Option(help: "The Warren binary (build it with `swift build -c release --product warren -Xswiftc -enforce-exclusivity=unchecked`).")
    var warrenBinary = ".build/release/warren"
    @Option(help: "Another Warren binary, measured as warren-poll-base beside warren-poll in the poll scenarios (two builds in one run, alternated rounds).")
    var baselineWarren: String?
    @Option(help: "The baseline build's configuration file (its own bridge.toml: a newer one may have keys it refuses); default: --config.")
    var baselineConfig: String?
    @Option(help: "Warren's configuration file; the bench overrides listen, auth and limits through the environment.")
    var config = "bridge.toml"
    @Option(help: "The port the bench's Warren listens on.")
    var warrenPort = 18080
    @Option var amqpURL = "amqp://guest:guest@127.0.0.1:5672/%2f"
    @Option(help: "RabbitMQ Web-STOMP's port (path /ws).")
    var stompPort = 15674
    @Option(help: "The port the bench's Nchan (nginx) listens on.")
    var nchanPort = 18090
    @Option(help: "The topic exchange of every run (Warren is pointed at it too). Not the shipped bridge.toml's `chat`: a demo node's store queue, bound there with `#`, would keep every bench message, and its clients would get them.")
    var exchange = "warren.bench"

    @Option var roomClients = 100
    @Option var roomMessages = 2000
    @Option(help: "Messages per second in room-paced.")
    var pacedRate = 100
    @Option var pacedMessages = 1000
    @Option var inboxUsers = 1000
    @Option var inboxMessages = 20000
    @Option(help: "Messages per second in inbox-paced (below what every target carries).")
    var inboxPacedRate = 2000
    @Option var inboxPacedMessages = 10000
    @Option(help: "Acked inboxes (warren-inbox, amqp-ack): deliveries acknowledged together, one ack frame (Warren `ids`, AMQP `multiple`) every this many. 1 acks each delivery.")
    var ackEvery = 50
    @Option(help: "Idle socket counts, comma-separated.")
    var idleSockets = "1000,5000,10000"
    @Option(help: "How long idle sockets are held (pings every 10 s).")
    var idleSeconds = 20
    @Option(help: "Idle sockets connect only (no subscription).")
    var idleConnectOnly = false
    @Option var pollClients = 500
    @Option var pollMessages = 400
    @Option(help: "Messages per second in poll.")
    var pollRate = 20
    @Option(help: "Messages in poll-burst (unpaced, to the same room).")
    var pollBurstMessages = 2000
    @Option(help: "Parked long-polls in poll-idle.")
    var pollIdleClients = 15000
    @Option(help: "Clients in scale: inbox WebSocket users, then long-pollers, each given one message of its own.")
    var scaleClients = 15000
    @Option(help: "Messages (at 50/s) in greedy, with and without the greedy clients.")
    var greedyMessages = 500

    @Option(help: "Messages stored before history is measured (history).")
    var historyMessages = 1_000_000
    @Option(help: "Conversations the stored messages are spread over (history).")
    var historyRoutes = 1_000
    @Option(help: "History pages fetched one after another (history).")
    var historyRequests = 2_000

    @Option(help: "Publishing clients, each with a 1:1 conversation of its own (publish).")
    var publishClients = 1_000
    @Option(help: "Messages each publishing client sends, one at a time (publish).")
    var publishMessages = 20
    @Option(help: "Present users, spread over two nodes (presence).")
    var presenceUsers = 10_000
    @Option(help: "Rooms the present users are spread over (presence).")
    var presenceRooms = 100
    @Option(help: "Presence queries timed (presence).")
    var presenceQueries = 2_000

    @Option(help: "Live sockets cut at once and resubscribing with since (recover).")
    var recoverSockets = 10_000
    @Option(help: "Rooms the recovering sockets are spread over (recover).")
    var recoverRooms = 100
    @Option(help: "Messages per second over all the rooms (recover).")
    var recoverRate = 1_000
    @Option(help: "Seconds of publishing (recover).")
    var recoverSeconds = 20
    @Option(help: "Seconds of publishing before every socket is cut (recover).")
    var recoverCutAfter = 5
    @Option(help: "Seconds between the cut and the first reconnect (recover).")
    var recoverGap = 2
    @Option(help: "Warren's recover.max_messages in the recover runs.")
    var recoverMaxMessages = 1_000
    @Option(help: "Store backends the recover scenario runs on, comma-separated (sqlite, postgres).")
    var recoverStores = "sqlite,postgres"

    @Option(help: "Publishes awaiting confirms at once (unpaced scenarios).")
    var window = 256
    @Option(help: "Clients set up concurrently (the connect rate of 10,000 idle sockets is the bench's own below ~256: its clients and Warren share the cores).")
    var lanes = 256
    @Option(help: "Event-loop threads the receiving clients are spread over (one recorder each).")
    var receiveLoops = 2
    @Option(help: "A run ends when nothing new was delivered for this long.")
    var stallSeconds = 10
    @Option(help: "At most this long waiting for the broker to go quiet before each run.")
    var quietSeconds = 60
    @Option var seed: UInt64 = 7

    mutating func validate() throws {
        // Both sides hold at most 100 unacknowledged (Warren's inbox prefetch, amqp-ack's QoS):
        // more than half of it unacked would stall them on the acks, not measure them.
        guard (1...50).contains(ackEvery) else { throw ValidationError("--ack-every must be 1 to 50") }
    }
}

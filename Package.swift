// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "warren",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "AMQPClient", targets: ["AMQPClient"]),
        // Exposed for Fuzz/ (a separate package built with -sanitize=fuzzer).
        .library(name: "WarrenCore", targets: ["WarrenCore"]),
        .executable(name: "warren", targets: ["warren"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.1.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-atomics.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // The Swift client, a package of its own (`warren chat` is its first user).
        .package(path: "clients/swift"),
    ],
    targets: [
        // The AMQP 0-9-1 client: knows nothing of chat.
        .target(
            name: "AMQPClient",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The bridge core: envelope, routing, sessions, ACL, metrics, config. No HTTP.
        .target(
            name: "WarrenCore",
            dependencies: [
                "AMQPClient",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Atomics", package: "swift-atomics"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The conversation store's backends (docs/protocol.md) behind WarrenCore's `ConversationStore`.
        .target(
            name: "WarrenStore",
            dependencies: [
                "WarrenCore",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The HTTP edge: one connection state machine per connection, the
        // WebSocket door and hummingbird's router; a thin layer over WarrenCore.
        .target(
            name: "WarrenHTTP",
            dependencies: [
                "WarrenCore",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The router, its middleware and request contexts (not its HTTP server: the
                // edge's connections are WarrenHTTP's own).
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Atomics", package: "swift-atomics"),
                // The listener's graceful shutdown (ServerQuiescingHelper).
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                // SHA-1 for the WebSocket handshake's Sec-WebSocket-Accept (RFC 6455 §4.2.2).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The JavaScript client (Client/warren.js, linked from clients/js), served at /warren.js.
            resources: [.embedInCode("Client/warren.js")]
        ),
        // Linux's epoll, eventfd, accept4 and thread names, which Glibc's module leaves out (empty elsewhere).
        .target(name: "CWarrenEpoll"),
        // The epoll door (`http.poll_door = "epoll"`): WarrenHTTP's connections served on Warren's
        // own epoll threads. Linux only: elsewhere it compiles to nothing.
        .target(
            name: "WarrenEpollDoor",
            dependencies: [
                "WarrenHTTP",
                "WarrenCore",
                .target(name: "CWarrenEpoll", condition: .when(platforms: [.linux])),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The loops' timers.
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        // The executable: a few lines of wiring.
        .executableTarget(
            name: "warren",
            dependencies: [
                "WarrenCore",
                "WarrenHTTP",
                .target(name: "WarrenEpollDoor", condition: .when(platforms: [.linux])),
                "WarrenStore",
                // `warren chat`: the terminal chat, on the Swift client.
                .product(name: "WarrenClient", package: "swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // examples/: a bot that joins conversations over plain AMQP (see README).
        .executableTarget(
            name: "warren-echo-bot",
            dependencies: [
                "AMQPClient",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "examples/EchoBot"
        ),
        // Benchmarks/: the load tool that measures Warren beside RabbitMQ Web-STOMP and plain AMQP
        // (see BENCHMARKS.md). Its wire parsing lives in a library so the unit tests can reach it.
        .target(
            name: "WarrenBenchKit",
            dependencies: [
                "AMQPClient",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Benchmarks/WarrenBenchKit"
        ),
        .executableTarget(
            name: "warren-bench",
            dependencies: [
                "WarrenBenchKit",
                "AMQPClient",
                // The history scenario fills a store through the store's own API.
                "WarrenCore",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                "WarrenStore",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/warren-bench"
        ),
        // Not Warren: a measuring instrument, the least a long-poll server fed through RabbitMQ costs (BENCHMARKS.md).
        .executableTarget(
            name: "poll-floor",
            dependencies: [
                "AMQPClient",
                .target(name: "CWarrenEpoll", condition: .when(platforms: [.linux])),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Benchmarks/poll-floor"
        ),
        // Unit tests: no broker, run in seconds (the recovery tests talk to a scripted AMQP peer on loopback).
        .testTarget(
            name: "AMQPClientTests",
            dependencies: [
                "AMQPClient",
                "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "WarrenCoreTests",
            dependencies: ["WarrenCore"]
        ),
        // The store's backends against real databases (SQLite in a temporary file, PostgreSQL from scripts/postgres.sh).
        // The HTTP frontend's pieces that need no sockets (the poll path's request parser, the task gate).
        .testTarget(
            name: "WarrenHTTPTests",
            dependencies: [
                "WarrenHTTP",
                "WarrenCore",
                "AMQPClient",
                "TestSupport",
                // The router's endpoints, in HummingbirdTesting's router mode.
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        // The epoll door's loop and socket options (Linux).
        .testTarget(
            name: "WarrenEpollDoorTests",
            dependencies: [
                "WarrenEpollDoor",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "WarrenStoreTests",
            dependencies: ["WarrenStore", "WarrenCore", "TestSupport", .product(name: "PostgresNIO", package: "postgres-nio")]
        ),
        .testTarget(
            name: "WarrenBenchKitTests",
            dependencies: ["WarrenBenchKit", .product(name: "NIOCore", package: "swift-nio")]
        ),
        // Broker-backed tests: need the local RabbitMQ (scripts/rabbitmq.sh).
        // Helpers shared by the test targets (the broker-backed ones' rabbitmqctl, a seeded generator).
        .target(
            name: "TestSupport",
            dependencies: [.product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "AMQPIntegrationTests",
            dependencies: [
                "AMQPClient",
                "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "WarrenIntegrationTests",
            dependencies: [
                "WarrenCore",
                "WarrenStore",
                .product(name: "WarrenClient", package: "swift"),
                "TestSupport",
                "AMQPClient",
                // The load tool's light clients (one NIO channel each), for the scale tests.
                "WarrenBenchKit",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // Tokens shaped as other identity providers issue them (TestTokens).
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
    ]
)

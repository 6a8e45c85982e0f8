// swift-tools-version: 6.0
import PackageDescription

// Warren's Swift client: its own package, so an app depends on it alone (nothing of the
// server). The WebSocket runs on SwiftNIO (NIOPosix, TLS through swift-nio-ssl), HTTP on
// URLSession (FoundationNetworking on Linux).
let package = Package(
    name: "WarrenClient",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "WarrenClient", targets: ["WarrenClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        .target(
            name: "WarrenClient",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // Without a server: the wire format, the ids a client remembers, the configuration. The
        // client against a real Warren is tested by the server's suite (WarrenClientTests).
        .testTarget(name: "WarrenClientTests", dependencies: ["WarrenClient"]),
    ]
)

// swift-tools-version: 6.0
// libFuzzer targets for Warren's decoders. A separate package because the fuzz
// executable has no `main` of its own (libFuzzer supplies it) and only links when built
// with `-sanitize=fuzzer`; see scripts/fuzz.sh.
import PackageDescription

let package = Package(
    name: "warren-fuzz",
    dependencies: [
        .package(name: "warren", path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "warren-fuzz",
            dependencies: [
                .product(name: "AMQPClient", package: "warren"),
                .product(name: "WarrenCore", package: "warren"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
    ]
)

import NIOCore
import NIOPosix

/// A loopback port nothing listens on right now.
public func freePort() throws -> Int {
    let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).wait()
    let port = channel.localAddress!.port!
    try channel.close().wait()
    return port
}

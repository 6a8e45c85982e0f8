#if canImport(Glibc)
import Glibc
#endif
import NIOCore

/// TCP acknowledgements on a poller's connection.
///
/// A poller sends its next request as soon as it has read an answer, and that request is
/// usually parked: its answer comes when the next message does. Linux acknowledges such a
/// request with a packet of its own, sent from inside Warren's `read` of it (a small segment,
/// read while the connection is not in the kernel's "interactive" mode) — on loopback ~12 % of
/// Warren's CPU per poll answer, spent while the last message's answers are being written to
/// every other poller. The kernel enters interactive mode (acknowledgements delayed up to
/// 40 ms, carried by the next data sent) only when the answer follows the request within that
/// delay, which a parked poll's answer often does not. So after each poll answer Warren puts the
/// connection in that mode itself (`TCP_QUICKACK` 0, a one-shot switch the kernel may leave):
/// the next request's acknowledgement rides on its answer, or, if that takes longer than the
/// delay, goes by the kernel's timer — never in the fan-out. What a client sees is the same
/// TCP; a client that writes one request in two small segments with Nagle on (rare: browsers,
/// curl, Node and NIO disable it) may wait up to the delay for the second.
enum PollerAcknowledgements {
    #if os(Linux)
    private static let quickAck = ChannelOptions.Types.SocketOption(level: .tcp, name: .init(rawValue: CInt(TCP_QUICKACK)))
    #endif

    /// Delays the acknowledgement of the next request on `channel` (on its event loop).
    static func delayNext(on channel: any Channel) {
        #if os(Linux)
        try? channel.syncOptions?.setOption(quickAck, value: 0)
        #endif
    }
}

#if os(Linux)
/// One connection of ``EpollWorker``; its session is the connection.
final class EpollConnection {
    let fd: Int32
    var buffer: [UInt8] = []
    var parked = false
    /// Messages that came while no poll was parked.
    var pending: [FloorMessage] = []
    /// Where it is in its worker's sessions; -1 before `POST /v1/poll`.
    var index = -1

    init(fd: Int32) {
        self.fd = fd
        buffer.reserveCapacity(2048)
    }
}
#endif

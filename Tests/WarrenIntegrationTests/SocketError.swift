struct SocketError: Error, CustomStringConvertible {
    let description: String
}

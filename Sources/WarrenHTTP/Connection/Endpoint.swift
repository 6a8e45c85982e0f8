/// Which of the connection's own endpoints a request is for, from its method and path
/// (``HTTPConnection``); anything else is the router's.
enum Endpoint: Equatable {
    /// `GET /v1/poll/<session>`: the session string's bytes in the target.
    case poll(session: Range<Int>)
    /// `POST /v1/poll`.
    case create
    /// `POST /v1/messages`.
    case publish
    /// `GET /v1/sse`: an event stream.
    case eventStream
    case router

    init(_ head: RawRequestHead) {
        var target = head.target
        // On the contiguous bytes: index-by-index work on `String.UTF8View` showed in poll profiles.
        self = target.withUTF8 { path -> Endpoint in
            let end = ByteSearch.index(of: UInt8(ascii: "?"), in: path, from: 0) ?? path.count
            let p = UnsafeBufferPointer(rebasing: path[..<end])
            if ByteSearch.equals(p[...], "/v1/messages") { return head.method == .post ? .publish : .router }
            if ByteSearch.equals(p[...], "/v1/sse") { return head.method == .get ? .eventStream : .router }
            guard ByteSearch.hasPrefix(p, "/v1/poll") else { return .router }
            if p.count == 8 { return head.method == .post ? .create : .router }
            guard head.method == .get, p[8] == UInt8(ascii: "/"), p.count > 9,
                  ByteSearch.index(of: UInt8(ascii: "/"), in: p, from: 9) == nil else { return .router }
            return .poll(session: 9..<end)
        }
    }
}

/// Who is measured.
enum Target: String, CaseIterable, Codable {
    /// Warren, WebSocket clients with live subscriptions.
    case warrenWS = "warren-ws"
    /// Warren, WebSocket clients with inbox subscriptions (acked).
    case warrenInbox = "warren-inbox"
    /// Warren, HTTP long-polling clients (on the default door, `http.poll_door = "epoll"`).
    case warrenPoll = "warren-poll"
    /// The same, on NIO's channels (`http.poll_door = "nio"`): the door the epoll one must beat.
    case warrenPollNIO = "warren-poll-nio"
    /// The same, on another build of Warren (`--baseline-warren`): two builds in one run.
    case warrenPollBase = "warren-poll-base"
    /// Warren, Server-Sent Events readers (`GET /v1/sse`), a live subscription each.
    case warrenSSE = "warren-sse"
    /// RabbitMQ's Web-STOMP plugin on the same broker.
    case stomp = "web-stomp"
    /// Plain AMQP consumers, one connection each.
    case amqp = "amqp"
    /// Plain AMQP consumers acking by hand (prefetch 100, one `multiple` ack per 50): the
    /// like-for-like anchor of `warren-inbox`.
    case amqpAck = "amqp-ack"
    /// Nchan long-polling subscribers, one message per answer (the anchor for polling).
    case nchan = "nchan"
    /// Nchan long-polling subscribers, every waiting message in one answer (`nchan_longpoll_multipart_response raw`).
    case nchanMulti = "nchan-multi"
    /// Nchan `eventsource` subscribers (the anchor for Warren's SSE door).
    case nchanSSE = "nchan-sse"

    var usesWarren: Bool { self == .warrenWS || self == .warrenInbox || self == .warrenSSE || polls }
    /// Warren's long-pollers, whichever door or build.
    var polls: Bool { self == .warrenPoll || self == .warrenPollNIO || self == .warrenPollBase }
    var usesNchan: Bool { self == .nchan || self == .nchanMulti || self == .nchanSSE }
    /// Its clients are WebSockets (the idle runs ping them).
    var usesWebSockets: Bool { self == .warrenWS || self == .warrenInbox || self == .stomp }
}

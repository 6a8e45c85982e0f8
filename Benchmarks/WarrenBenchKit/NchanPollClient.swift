import NIOCore
import NIOHTTP1
import NIOPosix

/// A long-polling subscriber of Nchan (nginx's pub/sub module), the anchor for Warren's
/// polling door: `GET /sub/<channel>` (one message per answer) or `GET /multi/<channel>`
/// (every waiting message in one answer, `nchan_longpoll_multipart_response raw`), then each
/// next request with the last answer's `Last-Modified` / `Etag` as `If-Modified-Since` /
/// `If-None-Match`, as Nchan's long-poll protocol asks, on one keep-alive connection.
public enum NchanPollClient {
    /// Completes once the first request is written: the bench's Nchan starts new subscribers
    /// at the oldest buffered message, so nothing published after that is missed.
    public static func open(port: Int, channel: String, multi: Bool, index: Int, recorder: Recorder) -> EventLoopFuture<any Channel> {
        dial(port: port, recorder: recorder, name: "nchan poller \(index)") { ch, ready in
            // Without outbound header validation, as for Warren's pollers (PollClient).
            try ch.pipeline.syncOperations.addHTTPClientHandlers(enableOutboundHeaderValidation: false)
            try ch.pipeline.syncOperations.addHandler(
                NchanPollHandler(port: port, path: "/\(multi ? "multi" : "sub")/\(channel)", index: index, recorder: recorder, ready: ready))
        }
    }
}

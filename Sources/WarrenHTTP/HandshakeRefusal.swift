import NIOCore
import WarrenCore

/// Answers a refused WebSocket upgrade with the status DESIGN §4 names and its JSON error body
/// (401 a bad or missing token, 400 a bad `user` or `device` word, 429 over the connection
/// limit, 503 draining or the broker link down), then closes the connection. hummingbird-
/// websocket would answer every refusal with an empty 400, and a native client could not tell
/// "refresh the token" from "give up". Written from the front of the pipeline (below
/// hummingbird's HTTP encoder) before the upgrader is told, so its own answer finds the
/// connection closed.
enum HandshakeRefusal {
    static func send(on channel: any Channel, status: Int, code: ErrorCode, message: String) async {
        let body = RouteSupport.errorBody(code, message)
        var response = PollConnectionHandler.responseHead(status: status, length: body.count, close: true, reserving: body.count)
        response.writeBytes(body)
        let answer = response
        try? await channel.eventLoop.submit {
            guard let context = try? channel.pipeline.syncOperations.context(handlerType: ConnectionTaskGate.self) else {
                channel.close(promise: nil)
                return
            }
            context.writeAndFlush(NIOAny(answer), promise: nil)
            context.close(promise: nil)
        }.get()
    }
}

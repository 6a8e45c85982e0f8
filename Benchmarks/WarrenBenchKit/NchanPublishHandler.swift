import NIOCore
import NIOHTTP1

final class NchanPublishHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    let port: Int
    let state: NchanPublishState
    private var status: UInt = 0

    init(port: Int, state: NchanPublishState) {
        self.port = port
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): status = head.status.code
        case .body: break
        case .end: state.answered(context.channel, ok: status == 201 || status == 202)
        }
    }
}

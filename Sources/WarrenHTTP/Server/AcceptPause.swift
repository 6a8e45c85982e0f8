import NIOCore

/// How long a listener stops accepting after an accept failed (out of descriptors or memory):
/// NIO's listeners (``AcceptPauseHandler``) and the epoll door alike. nginx pauses 500 ms too.
package enum AcceptPause {
    package static let duration = TimeAmount.milliseconds(500)
}

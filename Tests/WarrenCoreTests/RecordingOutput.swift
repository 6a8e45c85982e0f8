import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import WarrenCore

/// A session output that keeps what it is given.
final class RecordingOutput: SessionOutput {
    private let state = NIOLockedValueBox<(frames: [String], inboxIDs: [String?], closed: UInt16?)>(([], [], nil))

    func send(_ frame: ByteBuffer) -> Bool {
        state.withLockedValue { $0.frames.append(String(buffer: frame)) }
        return true
    }
    func deliver(_ frame: ByteBuffer, inboxID: String?) -> Bool {
        state.withLockedValue { s in
            s.frames.append(String(buffer: frame))
            s.inboxIDs.append(inboxID)
        }
        return true
    }
    func close(code: UInt16, reason: String) { state.withLockedValue { $0.closed = code } }

    var frames: [String] { state.withLockedValue { $0.frames } }
    /// The close code, once the session closed it.
    var closed: UInt16? { state.withLockedValue { $0.closed } }
    var inboxIDs: [String?] { state.withLockedValue { $0.inboxIDs } }
    var json: [JSONValue] { frames.compactMap { try? JSONParser.parse(Array($0.utf8)) } }
}

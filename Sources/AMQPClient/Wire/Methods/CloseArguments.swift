/// `connection.close` and `channel.close`: why, and which method caused it.
public struct CloseArguments: Sendable, Hashable, CustomStringConvertible {
    public var replyCode: UInt16
    public var replyText: String
    public var classID: UInt16
    public var methodID: UInt16
    public init(replyCode: UInt16, replyText: String, classID: UInt16 = 0, methodID: UInt16 = 0) {
        self.replyCode = replyCode
        self.replyText = replyText
        self.classID = classID
        self.methodID = methodID
    }
    public var description: String { "\(replyCode) \(replyText)" + (classID != 0 ? " (method \(classID).\(methodID))" : "") }
}

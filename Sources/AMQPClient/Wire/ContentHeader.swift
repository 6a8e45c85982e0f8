import NIOCore

/// The content header frame that follows a content-bearing method.
public struct ContentHeader: Sendable, Hashable {
    public var classID: UInt16
    public var bodySize: UInt64
    public var properties: BasicProperties
    public init(classID: UInt16 = 60, bodySize: UInt64, properties: BasicProperties) {
        self.classID = classID
        self.bodySize = bodySize
        self.properties = properties
    }
}

/// WebSocket close codes of docs/protocol.md.
public enum CloseCode {
    public static let normal: UInt16 = 1000
    public static let goingAway: UInt16 = 1001
    public static let policy: UInt16 = 1008
    public static let tooBig: UInt16 = 1009
    public static let internalError: UInt16 = 1011
    public static let slowConsumer: UInt16 = 4008
    public static let tokenExpired: UInt16 = 4401
}

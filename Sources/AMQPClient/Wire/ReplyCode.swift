/// AMQP 0-9-1 reply codes used by this client.
public enum ReplyCode {
    public static let success: UInt16 = 200
    public static let contentTooLarge: UInt16 = 311
    public static let noRoute: UInt16 = 312
    public static let noConsumers: UInt16 = 313
    public static let connectionForced: UInt16 = 320
    public static let invalidPath: UInt16 = 402
    public static let accessRefused: UInt16 = 403
    public static let notFound: UInt16 = 404
    public static let resourceLocked: UInt16 = 405
    public static let preconditionFailed: UInt16 = 406
    public static let frameError: UInt16 = 501
    public static let syntaxError: UInt16 = 502
    public static let commandInvalid: UInt16 = 503
    public static let channelError: UInt16 = 504
    public static let unexpectedFrame: UInt16 = 505
    public static let resourceError: UInt16 = 506
    public static let notAllowed: UInt16 = 530
    public static let notImplemented: UInt16 = 540
    public static let internalError: UInt16 = 541
}

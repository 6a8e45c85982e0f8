import Histogram
/// What every recorder of one run counted, added up (read on each recorder's own loop).
public struct Tally: Sendable {
    public var unique = 0
    public var duplicates = 0
    public var unexpected = 0
    public var answers = 0
    public var errors: [String] = []
    public var latency = Histogram<UInt64>(highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)
    public var firstDelivery: UInt64 = 0
    public var lastDelivery: UInt64 = 0

    public init(_ recorders: [Recorder]) async throws {
        for recorder in recorders {
            let part = try await recorder.loop.submit {
                (recorder.unique, recorder.duplicates, recorder.unexpected, recorder.answers, recorder.errors,
                 recorder.latency, recorder.firstDelivery, recorder.lastDelivery)
            }.get()
            unique += part.0
            duplicates += part.1
            unexpected += part.2
            answers += part.3
            errors += part.4
            latency.add(part.5)
            if part.6 != 0 { firstDelivery = firstDelivery == 0 ? part.6 : min(firstDelivery, part.6) }
            lastDelivery = max(lastDelivery, part.7)
        }
    }
}

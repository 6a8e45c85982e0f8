import WarrenBenchKit

/// A sample of the three processes at one moment.
struct Snapshot: Codable {
    var warren: ProcessSample?
    var broker: ProcessSample?
    var bench: ProcessSample?
}

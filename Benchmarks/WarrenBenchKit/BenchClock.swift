import NIOCore

/// The one clock the publisher stamps with and every receiver reads: monotonic nanoseconds
/// of this process, so a latency is a difference of two readings of the same clock.
public enum BenchClock {
    @inline(__always)
    public static func now() -> UInt64 { NIODeadline.now().uptimeNanoseconds }
}

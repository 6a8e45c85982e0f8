/// A client's connection state, as ``WarrenClient/states`` reports it.
public enum ClientState: Sendable, Hashable {
    /// Connecting, or waiting `retryIn` before the next try.
    case connecting(retryIn: Duration?)
    /// Connected, every subscription in effect.
    case open(Transport)
    /// Closed by ``WarrenClient/close()``, or for good (1008, a token refused with no other).
    case closed
}

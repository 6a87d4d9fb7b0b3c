/// How `TLSClientContext` verifies servers and what it offers them.
public struct TLSClientConfiguration: Sendable {
    /// Extra trust anchors (a PEM file), in addition to the system store when that is enabled.
    /// Default: none.
    public var caFile: String?

    /// Trust the system store (see `systemTrustLocation`). Default: `true`.
    public var useSystemTrustStore: Bool = true

    /// Where the system store is read from; nil: `SystemTrustLocation.detect()` when the context
    /// is made (the hashed directory, read on demand, where there is one). Default: nil.
    public var systemTrustLocation: SystemTrustLocation? = nil

    /// ALPN protocols offered, in preference order; empty offers none. Default: `["http/1.1"]`.
    public var alpn: [String] = ["http/1.1"]

    /// Time from the start of the handshake (channel active) to its completion before the
    /// connection is failed with `TLSError.handshakeTimeout` and closed. Default: 10 seconds.
    public var handshakeTimeout: Duration = .seconds(10)

    /// Maximum number of "host:port" entries kept in the client session cache; the least recently
    /// stored entry is evicted first. Default: 1024.
    public var sessionCacheCapacity: Int = 1024

    public init() {}
}

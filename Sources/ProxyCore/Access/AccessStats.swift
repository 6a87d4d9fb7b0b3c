/// `/stats` → `access`: what the client ACL, the connection limits and proxy authentication did.
public struct AccessStats: Sendable, Equatable, Codable {
    public var openConnections: Int
    public var maxConnections: Int
    public var maxConnectionsPerClient: Int
    /// Connections refused by `--allow-client` since start.
    public var rejectedByACL: Int
    /// Connections refused by `--max-connections` / `--max-connections-per-client` since start.
    public var rejectedByLimits: Int
    /// accept() calls that failed for lack of descriptors or memory (each pauses the listener for
    /// 100 ms, so this grows by at most ~10 a second while the shortage lasts).
    public var acceptFailures: Int = 0
    /// nil without `--proxy-auth`.
    public var authSuccesses: Int?
    public var authFailures: Int?
    /// The transparent listener's counters; nil when `--transparent-listen` is off.
    public var transparent: TransparentStats.Snapshot? = nil
}

import TransparentProxy

/// `/stats` → `access`: what the client ACL, the connection limits and proxy authentication did.
package struct AccessStats: Sendable, Equatable, Codable {
    package var openConnections: Int
    package var maxConnections: Int
    package var maxConnectionsPerClient: Int
    /// Connections refused by `--allow-client` since start.
    package var rejectedByACL: Int
    /// Connections refused by `--max-connections` / `--max-connections-per-client` since start.
    package var rejectedByLimits: Int
    /// accept() calls that failed for lack of descriptors or memory (each pauses the listener for
    /// 100 ms, so this grows by at most ~10 a second while the shortage lasts).
    package var acceptFailures: Int = 0
    /// nil without `--proxy-auth`.
    package var authSuccesses: Int?
    package var authFailures: Int?
    /// The transparent listener's counters; nil when `--transparent-listen` is off.
    package var transparent: TransparentStats.Snapshot? = nil

    package init(openConnections: Int, maxConnections: Int, maxConnectionsPerClient: Int, rejectedByACL: Int, rejectedByLimits: Int, acceptFailures: Int = 0, authSuccesses: Int? = nil, authFailures: Int? = nil, transparent: TransparentStats.Snapshot? = nil) {
        self.openConnections = openConnections
        self.maxConnections = maxConnections
        self.maxConnectionsPerClient = maxConnectionsPerClient
        self.rejectedByACL = rejectedByACL
        self.rejectedByLimits = rejectedByLimits
        self.acceptFailures = acceptFailures
        self.authSuccesses = authSuccesses
        self.authFailures = authFailures
        self.transparent = transparent
    }
}

/// `/stats` → `access`: what the client ACL, the connection limits and proxy authentication did.
public struct AccessStats: Sendable, Equatable, Codable {
    public var openConnections: Int
    public var maxConnections: Int
    public var maxConnectionsPerClient: Int
    /// Connections refused by `--allow-client` since start.
    public var rejectedByACL: Int
    /// Connections refused by `--max-connections` / `--max-connections-per-client` since start.
    public var rejectedByLimits: Int
    /// nil without `--proxy-auth`.
    public var authSuccesses: Int?
    public var authFailures: Int?
}

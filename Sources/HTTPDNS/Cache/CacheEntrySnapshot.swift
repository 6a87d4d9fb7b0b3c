/// One cache entry as the admin `/cache` page shows it.
public struct CacheEntrySnapshot: Sendable, Equatable {
    public var name: String
    public var ipv4: [String]
    public var ipv6: [String]
    /// The TTL the entry was cached for (after clamping or capping).
    public var ttl: Duration
    /// Time left before expiry; negative once expired (a stale entry).
    public var remaining: Duration
    /// Set for a negative entry: why the name does not resolve.
    public var negative: ResolveFailure.Kind?
    /// Lookups since the answer was stored.
    public var hits: Int
    /// Expired but still served while a refresh runs.
    public var stale: Bool
    /// A background refresh is running.
    public var refreshing: Bool
    public var serverIP: String?

    public init(
        name: String, ipv4: [String], ipv6: [String], ttl: Duration, remaining: Duration,
        negative: ResolveFailure.Kind?, hits: Int, stale: Bool, refreshing: Bool, serverIP: String?
    ) {
        self.name = name
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ttl = ttl
        self.remaining = remaining
        self.negative = negative
        self.hits = hits
        self.stale = stale
        self.refreshing = refreshing
        self.serverIP = serverIP
    }
}

extension CacheEntrySnapshot: Codable {
    private enum CodingKeys: String, CodingKey {
        case name, ipv4, ipv6, ttl, remaining, negative, hits, stale, refreshing, serverIP = "server_ip"
    }

    // Durations as seconds, for people and scripts reading the admin JSON.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        ipv4 = try container.decode([String].self, forKey: .ipv4)
        ipv6 = try container.decode([String].self, forKey: .ipv6)
        ttl = .seconds(try container.decode(Double.self, forKey: .ttl))
        remaining = .seconds(try container.decode(Double.self, forKey: .remaining))
        negative = try container.decodeIfPresent(ResolveFailure.Kind.self, forKey: .negative)
        hits = try container.decode(Int.self, forKey: .hits)
        stale = try container.decode(Bool.self, forKey: .stale)
        refreshing = try container.decode(Bool.self, forKey: .refreshing)
        serverIP = try container.decodeIfPresent(String.self, forKey: .serverIP)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(ipv4, forKey: .ipv4)
        try container.encode(ipv6, forKey: .ipv6)
        try container.encode(ttl.cacheSeconds, forKey: .ttl)
        try container.encode(remaining.cacheSeconds, forKey: .remaining)
        try container.encodeIfPresent(negative, forKey: .negative)
        try container.encode(hits, forKey: .hits)
        try container.encode(stale, forKey: .stale)
        try container.encode(refreshing, forKey: .refreshing)
        try container.encodeIfPresent(serverIP, forKey: .serverIP)
    }
}

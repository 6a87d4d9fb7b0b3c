/// One successful answer from an HTTPDNS service, as the provider parsed it.
public struct ResolvedAnswer: Sendable, Equatable {
    public var ipv4: [String]
    public var ipv6: [String]
    /// As given by the service, before the cache clamps it.
    public var ttl: Duration
    /// Which resolver server answered; shown by `/resolve` and the admin cache page.
    public var serverIP: String?

    public init(ipv4: [String], ipv6: [String], ttl: Duration, serverIP: String? = nil) {
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ttl = ttl
        self.serverIP = serverIP
    }
}

extension ResolvedAnswer: Codable {
    private enum CodingKeys: String, CodingKey {
        case ipv4, ipv6, ttl, serverIP = "server_ip"
    }

    // `ttl` is written as seconds: `Duration`'s own encoding (two integers) is unreadable in the
    // admin/debug JSON and in the cache file.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.ipv4 = try container.decodeIfPresent([String].self, forKey: .ipv4) ?? []
        self.ipv6 = try container.decodeIfPresent([String].self, forKey: .ipv6) ?? []
        self.ttl = .seconds(try container.decode(Double.self, forKey: .ttl))
        self.serverIP = try container.decodeIfPresent(String.self, forKey: .serverIP)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(ipv4, forKey: .ipv4)
        try container.encode(ipv6, forKey: .ipv6)
        try container.encode(ttl.cacheSeconds, forKey: .ttl)
        try container.encodeIfPresent(serverIP, forKey: .serverIP)
    }
}

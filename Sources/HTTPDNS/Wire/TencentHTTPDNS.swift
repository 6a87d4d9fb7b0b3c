/// Tencent Cloud HTTPDNS (DNSPod) `/d`: request URLs. Parsing lives in `TencentHTTPDNS+Parsing.swift`.
///
///     https: GET /d?dn=a.com[,b.com]&id=ID&token=TOKEN&ttl=1[&type=aaaa|addrs][&ip=ECS&clientip=1]
///     http:  GET /d?dn=ENC&id=ID&alg=aes|des&ttl=1[&type=aaaa|addrs][&ip=ENC&clientip=1]
///
/// In http mode `dn` and `ip` are hex of the encrypted text (`TencentCipher`).
public enum TencentHTTPDNS {
    /// Names per batch request (the provider splits longer lists).
    public static let maximumBatchSize = 5

    /// How requests prove who is asking.
    public enum Authentication: Sendable {
        /// https mode: the account's token, in clear over TLS.
        case token(String)
        /// http mode: names (and the ECS address) encrypted with the account's key.
        case encrypted(TencentCipher)
    }

    /// The request URL for `hosts` (one, or a batch joined with ","). Throws for an empty list, an
    /// empty host or one containing "," (it would split into two on the server), or when
    /// encryption fails. The result carries the token: never log it.
    public static func url(
        endpoint: String,
        hosts: [String],
        id: String,
        authentication: Authentication,
        families: AddressFamilies,
        ecsIP: String?
    ) throws(WireError) -> String {
        guard !hosts.isEmpty else { throw .invalidBatch("no hosts") }
        for host in hosts where host.isEmpty || host.contains(",") {
            throw .invalidBatch("host '\(host)' is empty or contains ','")
        }
        let names = hosts.joined(separator: ",")
        var items: [(String, String)] = []
        switch authentication {
        case .token(let token):
            items = [("dn", names), ("id", id), ("token", token)]
            if let ecsIP { items.append(("ip", ecsIP)) }
        case .encrypted(let cipher):
            guard let dn = cipher.encryptHex(names) else { throw .invalidName("could not encrypt the name") }
            items = [("dn", dn), ("id", id), ("alg", cipher.algorithm.rawValue)]
            if let ecsIP {
                guard let ip = cipher.encryptHex(ecsIP) else { throw .invalidName("could not encrypt the ECS address") }
                items.append(("ip", ip))
            }
        }
        items.append(("ttl", "1"))
        if let type = typeValue(families) { items.append(("type", type)) }
        if ecsIP != nil { items.append(("clientip", "1")) }
        return QueryEncoding.append(items, to: endpoint)
    }

    /// `type`: nothing for A only (the service's default), `aaaa`, or `addrs` for both.
    static func typeValue(_ families: AddressFamilies) -> String? {
        switch families {
        case .ipv4: nil
        case .ipv6: "aaaa"
        case .both: "addrs"
        }
    }
}

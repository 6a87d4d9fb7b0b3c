/// Names kept away from the HTTPDNS service.
extension ConfigOption {
    public static let systemDNSDomain = ConfigOption(
        name: "system-dns-domain", valueName: "suffix",
        help: "Names under this domain suffix (e.g. cluster.local, svc, corp.example.com), and then also single-label names, are resolved only by the system resolver, never sent to the HTTPDNS service; repeatable or comma-separated",
        defaultText: "none", expectation: "expected domain suffixes like cluster.local,svc,corp.example.com",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.systemDNSDomains = try SystemDNSDomains(parsing: items)
    }
    .table(.resolver, .resolverCache, \.systemDNSDomains,
        example: "cluster.local,svc",
        doc: "Domain suffixes (`cluster.local`, `svc`, `corp.example.com`) whose names, and then also every single-label name, are resolved only by the system resolver and never sent to the HTTPDNS service; see [Resolution, cache and failover](#resolution-cache-and-failover). Reloadable. Flag repeatable (or comma-separated); env comma-separated; YAML list.")
}

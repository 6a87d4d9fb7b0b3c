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
}

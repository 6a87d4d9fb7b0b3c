/// The static provider's document:
/// `{"service":"..","enable":1,"domainlist":[{"domain":"a.test.com","ips":["1.2.3.4","2400::1"]}]}`.
public enum StaticList {
    /// Domains are lowercased without a trailing dot and must be valid host names;
    /// invalid domains and addresses are skipped, repeated domains merged, and a domain
    /// left with no valid address is dropped so the fallback resolves it.
    /// `enable` may be 0/1, true/false or "0"/"1"; missing means enabled.
    /// A missing `domainlist` is an empty list; one that is not an array throws.
    public static func parse(_ bytes: [UInt8]) throws(WireError) -> StaticListDocument {
        let object = try JSONInput.object(bytes)
        var document = StaticListDocument(service: JSONInput.string(object["service"]))
        if let enable = object["enable"] {
            guard let flag = JSONInput.int(enable) else {
                throw .malformedJSON("'enable' is not 0 or 1")
            }
            document.enabled = flag != 0
        }
        guard let rawList = object["domainlist"] else { return document }
        guard let list = rawList as? [Any] else { throw .malformedJSON("'domainlist' is not an array") }

        var collectors: [String: IPText.Collector] = [:]
        for case let item as [String: Any] in list {
            guard let rawDomain = JSONInput.string(item["domain"]) else { continue }
            let domain = DNSName.normalized(rawDomain)
            guard (try? DNSName.wire(fromText: domain)) != nil else { continue }
            var collector = collectors[domain] ?? IPText.Collector()
            collector.addAll(item["ips"])
            collector.addAll(item["ipsv6"])
            collectors[domain] = collector
        }
        for (domain, collector) in collectors where !collector.isEmpty {
            document.entries[domain] = .init(ipv4: collector.ipv4, ipv6: collector.ipv6)
        }
        return document
    }
}

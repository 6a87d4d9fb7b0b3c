extension AlibabaHTTPDNS {
    /// The answer the SDKs use when the service sends `ttl` <= 0 or none.
    public static let defaultTTL = 60

    /// A `d` / `sign_d` answer:
    /// `{"host":"..","ips":["1.2.3.4"],"ipsv6":["2400:3200::1"],"ttl":57,"client_ip":".."}`.
    /// Both lists empty is noData (the ttl is kept: the service means it as the time
    /// to wait before asking again). An error document (`{"code":"X"}`) throws
    /// `.providerError`.
    public static func parseSingle(_ body: [UInt8]) throws(WireError) -> WireAnswer {
        let object = try JSONInput.object(body)
        if object["ips"] == nil, object["ipsv6"] == nil, let code = JSONInput.string(object["code"]) {
            throw .providerError(code: code)
        }
        guard object["ips"] != nil || object["ipsv6"] != nil || object["host"] != nil else {
            throw .malformedJSON("no 'ips', 'ipsv6' or 'host' in the answer")
        }
        var collector = IPText.Collector()
        collector.addAll(object["ips"])
        collector.addAll(object["ipsv6"])
        let clientIP = JSONInput.string(object["client_ip"]).flatMap { IPText.canonical($0)?.text }
        return WireAnswer(
            outcome: collector.isEmpty ? .noData : .addresses,
            ipv4: collector.ipv4,
            ipv6: collector.ipv6,
            ttl: ttl(object["ttl"]),
            clientIP: clientIP
        )
    }

    /// A `resolve` / `sign_resolve` answer: one item per host and family,
    /// merged into one answer per lowercased host (trailing dot dropped) with the
    /// smallest ttl. Items without a host are skipped; addresses go by their real
    /// family whatever `type` says.
    public static func parseBatch(_ body: [UInt8]) throws(WireError) -> [String: WireAnswer] {
        let object = try JSONInput.object(body)
        guard let items = object["dns"] as? [Any] else {
            if let code = JSONInput.string(object["code"]) { throw .providerError(code: code) }
            throw .malformedJSON("no 'dns' array in the batch answer")
        }
        var collectors: [String: IPText.Collector] = [:]
        var ttls: [String: Int] = [:]
        var order: [String] = []
        for case let item as [String: Any] in items {
            guard let rawHost = JSONInput.string(item["host"]) else { continue }
            let host = DNSName.normalized(rawHost)
            guard !host.isEmpty else { continue }
            if collectors[host] == nil {
                collectors[host] = IPText.Collector()
                order.append(host)
            }
            collectors[host]?.addAll(item["ips"])
            collectors[host]?.addAll(item["ipsv6"])
            let itemTTL = ttl(item["ttl"])
            ttls[host] = min(ttls[host] ?? itemTTL, itemTTL)
        }
        var answers: [String: WireAnswer] = [:]
        for host in order {
            guard let collector = collectors[host] else { continue }
            answers[host] = WireAnswer(
                outcome: collector.isEmpty ? .noData : .addresses,
                ipv4: collector.ipv4,
                ipv6: collector.ipv6,
                ttl: ttls[host] ?? defaultTTL
            )
        }
        return answers
    }

    /// The `code` of an error body (`{"code":"InvalidAccount"}`), nil if there is none.
    public static func errorCode(in body: [UInt8]) -> String? {
        guard let object = try? JSONInput.object(body) else { return nil }
        guard let code = JSONInput.string(object["code"]), !code.isEmpty else { return nil }
        return code
    }

    private static func ttl(_ value: Any?) -> Int {
        guard let raw = JSONInput.ttl(value), raw > 0 else { return defaultTTL }
        return raw
    }
}

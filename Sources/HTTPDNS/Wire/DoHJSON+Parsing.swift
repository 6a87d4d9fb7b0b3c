extension DoHJSON {
    /// Parses a JSON DoH answer for `name` / `type`.
    ///
    /// - `Status` 0: follows the CNAME chain from `name` through `Answer` and takes the
    ///   asked type's `data` at its end (TTL = min over the chain and those records);
    ///   nothing there is noData, with the SOA negative TTL from `Authority` if any.
    /// - `Status` 3: nxdomain, TTL from the SOA in `Authority` if any.
    /// - any other `Status` throws `.rcode`.
    /// - a bare array (`short=1`), e.g. `["1.2.3.4"]`: the valid addresses of the asked
    ///   family, ttl nil (the short form has none).
    /// `Question` (object at Alibaba, array at Google) and unknown fields are ignored.
    public static func parse(_ body: [UInt8], name: String, type: DNSRecordType) throws(WireError) -> WireAnswer {
        let root = try JSONInput.parse(body)
        let wanted: IPText.Family = type == .a ? .v4 : .v6
        if let list = root as? [Any] {
            var collector = IPText.Collector()
            for case let text as String in list {
                if let (canonical, family) = IPText.canonical(text), family == wanted {
                    collector.insert(canonical, family)
                }
            }
            return WireAnswer(outcome: collector.isEmpty ? .noData : .addresses, ipv4: collector.ipv4, ipv6: collector.ipv6)
        }
        guard let object = root as? [String: Any] else {
            throw .malformedJSON("top level is neither an object nor an array")
        }
        guard let status = JSONInput.int(object["Status"]) else {
            throw .malformedJSON("no numeric 'Status'")
        }
        switch status {
        case 0:
            let records = try answerRecords(object["Answer"], wanted: wanted, asked: type)
            let result = try CNAMEChain(records).resolve(from: DNSName.normalized(name))
            guard !result.addresses.isEmpty else {
                return WireAnswer(outcome: .noData, ttl: negativeTTL(object["Authority"]))
            }
            var collector = IPText.Collector()
            for address in result.addresses { collector.insert(address.text, address.family) }
            return WireAnswer(outcome: .addresses, ipv4: collector.ipv4, ipv6: collector.ipv6, ttl: result.ttl)
        case 3:
            return WireAnswer(outcome: .nxdomain, ttl: negativeTTL(object["Authority"]))
        default:
            throw .rcode(status)
        }
    }

    /// The asked type's addresses and the CNAMEs of `Answer`; malformed items are skipped.
    private static func answerRecords(
        _ value: Any?, wanted: IPText.Family, asked: DNSRecordType
    ) throws(WireError) -> [CNAMEChain<String>.Record] {
        guard let value else { return [] }
        guard let list = value as? [Any] else { throw .malformedJSON("'Answer' is not an array") }
        var records: [CNAMEChain<String>.Record] = []
        for case let item as [String: Any] in list {
            guard let owner = JSONInput.string(item["name"]),
                  let recordType = JSONInput.int(item["type"]),
                  let data = JSONInput.string(item["data"]) else { continue }
            let ttl = JSONInput.ttl(item["TTL"])
            if recordType == Int(asked.rawValue) {
                guard let (canonical, family) = IPText.canonical(data), family == wanted else { continue }
                records.append(.init(owner: DNSName.normalized(owner), ttl: ttl, value: .address(canonical, family)))
            } else if recordType == 5 {
                records.append(.init(owner: DNSName.normalized(owner), ttl: ttl, value: .alias(DNSName.normalized(data))))
            }
        }
        return records
    }

    /// min(SOA TTL, SOA MINIMUM) of the first usable SOA in `Authority`
    /// (data: "mname rname serial refresh retry expire minimum"), nil without one.
    private static func negativeTTL(_ value: Any?) -> Int? {
        guard let list = value as? [Any] else { return nil }
        for case let item as [String: Any] in list where JSONInput.int(item["type"]) == 6 {
            guard let data = JSONInput.string(item["data"]) else { continue }
            let fields = data.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count == 7, let last = fields.last,
                  let minimum = JSONInput.ttl(String(last)) else { continue }
            return CNAMEChain<String>.minimum(JSONInput.ttl(item["TTL"]), minimum)
        }
        return nil
    }
}

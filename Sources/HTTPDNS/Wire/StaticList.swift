/// The static provider's document:
/// `{"service":"..","enable":1,"domainlist":[{"domain":"a.test.com","ips":["1.2.3.4","2400::1"]}]}`.
public enum StaticList {
    /// Domains are lowercased without a trailing dot and must be valid host names;
    /// invalid domains and addresses are skipped, repeated domains merged, and a domain
    /// left with no valid address is dropped so the fallback resolves it.
    /// `enable` may be 0/1, true/false or "0"/"1"; missing means enabled.
    /// A missing `domainlist` is an empty list; one that is not an array throws.
    public static func parse(_ bytes: [UInt8]) throws(WireError) -> StaticListDocument {
        try parseReporting(bytes).document
    }

    /// `parse`, also saying what was skipped and where: one problem per entry or address left out,
    /// with its line in `bytes` (1-based) and the reason, so an operator editing the file can fix it.
    /// A document that is not JSON throws with the line and column where the parser stopped.
    public static func parseReporting(_ bytes: [UInt8]) throws(WireError) -> (document: StaticListDocument, problems: [StaticListProblem]) {
        let object = try topLevelObject(bytes)
        var document = StaticListDocument(service: JSONInput.string(object["service"]))
        if let enable = object["enable"] {
            guard let flag = JSONInput.int(enable) else {
                throw .malformedJSON("'enable' is not 0 or 1")
            }
            document.enabled = flag != 0
        }
        guard let rawList = object["domainlist"] else { return (document, []) }
        guard let list = rawList as? [Any] else { throw .malformedJSON("'domainlist' is not an array") }

        var lines = LineLocator(bytes)
        var problems: [StaticListProblem] = []
        var collectors: [String: IPText.Collector] = [:]
        for (index, element) in list.enumerated() {
            let entry = index + 1
            guard let item = element as? [String: Any] else {
                let line = (element as? String).map { lines.line(ofString: $0) } ?? lines.nextLine()
                problems.append(.init(line: line, entry: entry, reason: "entry is not an object like {\"domain\": \"a.example.com\", \"ips\": [\"192.0.2.1\"]}"))
                continue
            }
            guard let rawDomain = JSONInput.string(item["domain"]) else {
                problems.append(.init(line: lines.nextLine(), entry: entry, reason: "entry has no \"domain\" string"))
                continue
            }
            let line = lines.line(ofString: rawDomain)
            let domain = DNSName.normalized(rawDomain)
            guard (try? DNSName.wire(fromText: domain)) != nil else {
                problems.append(.init(line: line, entry: entry, reason: "'\(rawDomain)' is not a valid host name; the entry is skipped"))
                continue
            }
            var collector = collectors[domain] ?? IPText.Collector()
            let before = problems.count
            for key in ["ips", "ipsv6"] {
                guard let value = item[key] else { continue }
                guard let addresses = value as? [Any] else {
                    problems.append(.init(line: line, entry: entry, reason: "\"\(key)\" of \(domain) is not a list"))
                    continue
                }
                for address in addresses {
                    let text = address as? String ?? "\(address)"
                    if !collector.add(text) {
                        problems.append(.init(line: lines.line(ofString: text, from: line), entry: entry, reason: "'\(text)' of \(domain) is not an IP address; it is skipped"))
                    }
                }
            }
            if collector.isEmpty && problems.count == before {
                problems.append(.init(line: line, entry: entry, reason: "\(domain) has no addresses; it is resolved by the fallback"))
            }
            collectors[domain] = collector
        }
        for (domain, collector) in collectors where !collector.isEmpty {
            document.entries[domain] = .init(ipv4: collector.ipv4, ipv6: collector.ipv6)
        }
        return (document, problems)
    }

    /// The top-level object; a syntax error says where (line and column).
    private static func topLevelObject(_ bytes: [UInt8]) throws(WireError) -> [String: Any] {
        guard !bytes.isEmpty else { throw .malformedJSON("empty document") }
        let parsed: Any
        do {
            parsed = try JSONReader.parse(bytes)
        } catch {
            throw .malformedJSON("not valid JSON: \(error)")
        }
        guard let object = parsed as? [String: Any] else { throw .malformedJSON("top level is not an object") }
        return object
    }
}

/// An entry or address of a static list that was left out, and where it is.
public struct StaticListProblem: Sendable, Equatable, CustomStringConvertible {
    /// 1-based line in the document (best effort: where the entry's text was found).
    public var line: Int
    /// 1-based position in `domainlist`.
    public var entry: Int
    public var reason: String

    public var description: String { "line \(line) (domainlist entry \(entry)): \(reason)" }
}

/// Finds the lines of entries in document order: each search starts where the last one ended.
struct LineLocator {
    private let bytes: [UInt8]
    private var cursor = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The line of the next occurrence of `text` as a JSON string (from the cursor, or from the
    /// start of line `from`), moving the cursor past it; the cursor's line when not found.
    mutating func line(ofString text: String, from line: Int? = nil) -> Int {
        let needle = Array("\"\(text)\"".utf8)
        var start = cursor
        if let line { start = max(cursor, offset(ofLine: line)) }
        if needle.count <= bytes.count, start <= bytes.count - needle.count {
            for index in start...(bytes.count - needle.count) where bytes[index] == needle[0] {
                if Array(bytes[index..<(index + needle.count)]) == needle {
                    cursor = index + needle.count
                    return self.line(at: index)
                }
            }
        }
        return line ?? nextLine()
    }

    /// The line of the next entry (the next `{` after the cursor), for entries without a domain.
    mutating func nextLine() -> Int {
        guard cursor < bytes.count, let open = bytes[cursor...].firstIndex(of: UInt8(ascii: "{")) else {
            return line(at: min(cursor, bytes.count))
        }
        cursor = open + 1
        return line(at: open)
    }

    private func line(at index: Int) -> Int {
        1 + bytes[..<index].reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
    }

    private func offset(ofLine line: Int) -> Int {
        var seen = 1
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") {
            seen += 1
            if seen == line { return index + 1 }
        }
        return 0
    }
}

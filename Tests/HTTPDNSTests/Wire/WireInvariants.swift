@testable import HTTPDNS

/// What every successful parse must satisfy, whatever the input: used by the
/// random and mutation tests so they can fail on a wrong result, not only on a crash.
enum WireInvariants {
    /// nil when `answer` is consistent, else the first violation.
    static func violation(in answer: WireAnswer) -> String? {
        if (answer.outcome == .addresses) != (!answer.ipv4.isEmpty || !answer.ipv6.isEmpty) {
            return "outcome \(answer.outcome) with \(answer.ipv4.count + answer.ipv6.count) addresses"
        }
        for ip in answer.ipv4 where IPText.canonical(ip)?.text != ip || IPText.canonical(ip)?.family != .v4 {
            return "bad IPv4 text \(ip)"
        }
        for ip in answer.ipv6 where IPText.canonical(ip)?.text != ip || IPText.canonical(ip)?.family != .v6 {
            return "bad IPv6 text \(ip)"
        }
        if Set(answer.ipv4).count != answer.ipv4.count || Set(answer.ipv6).count != answer.ipv6.count {
            return "duplicate addresses"
        }
        if let ttl = answer.ttl, ttl < 0 || ttl > Int(Int32.max) {
            return "ttl \(ttl) out of range"
        }
        if let ip = answer.clientIP, IPText.canonical(ip)?.text != ip {
            return "bad client ip \(ip)"
        }
        return nil
    }

    static func violation(in document: StaticListDocument) -> String? {
        for (domain, entry) in document.entries {
            if domain.isEmpty || domain != DNSName.normalized(domain) { return "bad domain key \(domain)" }
            if let problem = violation(in: WireAnswer(outcome: .addresses, ipv4: entry.ipv4, ipv6: entry.ipv6)) {
                return "\(domain): \(problem)"
            }
        }
        return nil
    }

    /// Runs every parser on `bytes`; returns the first invariant violation, if any.
    /// Throwing is fine: the point is that nothing traps or returns nonsense.
    static func runAllParsers(_ bytes: [UInt8]) -> String? {
        if let answer = try? AlibabaHTTPDNS.parseSingle(bytes), let problem = violation(in: answer) {
            return "parseSingle: \(problem)"
        }
        if let answers = try? AlibabaHTTPDNS.parseBatch(bytes) {
            for (host, answer) in answers {
                if let problem = violation(in: answer) { return "parseBatch[\(host)]: \(problem)" }
            }
        }
        _ = AlibabaHTTPDNS.errorCode(in: bytes)
        for type in DNSRecordType.allCases {
            if let answer = try? DoHJSON.parse(bytes, name: "www.example.com", type: type), let problem = violation(in: answer) {
                return "DoHJSON \(type): \(problem)"
            }
            if let answer = try? DNSMessage.parse(bytes, name: "www.example.com", type: type, expectedID: nil),
               let problem = violation(in: answer) {
                return "DNSMessage \(type): \(problem)"
            }
        }
        if let document = try? StaticList.parse(bytes), let problem = violation(in: document) {
            return "StaticList: \(problem)"
        }
        for line in (try? TencentHTTPDNS.parse(bytes)) ?? [] {
            if let problem = violation(in: line.answer) { return "Tencent: \(problem)" }
        }
        return nil
    }
}

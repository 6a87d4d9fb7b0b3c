import ProxyConfig

/// What the system resolver said for a name, as the audit compares it.
enum SystemAnswer: Sendable, Equatable {
    case addresses([String])
    /// getaddrinfo failed (NXDOMAIN, no addresses, resolver unreachable): its message.
    case failed(String)
}

/// The verdict of comparing an HTTPDNS answer with the system resolver's for the same name.
///
/// - `agree`: in every family both answered, the address sets share at least one address (CDNs
///   hand out different subsets of one pool, so overlap, not equality, is the test).
/// - `mismatch`: in some family both answered, the sets share no address — the classic hijack
///   (ad injection, a captive portal, a poisoned cache) or a stale local resolver.
/// - `systemNoAnswer`: the system resolver failed or returned nothing while HTTPDNS had
///   addresses — a blocked name (NXDOMAIN injection) or a broken local resolver. Recorded as a
///   disagreement of its own kind.
/// - `noCommonFamily`: both answered, but in different families only (HTTPDNS A records, the
///   system only AAAA): nothing to compare, not a disagreement.
enum AnswerComparison: String, Sendable, Codable, CaseIterable {
    case agree
    case mismatch
    case systemNoAnswer = "system_no_answer"
    case noCommonFamily = "no_common_family"

    var isDisagreement: Bool { self == .mismatch || self == .systemNoAnswer }

    /// The kinds of disagreement (the metric's `kind` label).
    static let disagreementKinds: [AnswerComparison] = [.mismatch, .systemNoAnswer]

    init(httpdns: [String], system: SystemAnswer) {
        guard case .addresses(let systemAddresses) = system, !systemAddresses.isEmpty else {
            self = .systemNoAnswer
            return
        }
        let ours = Self.byFamily(httpdns)
        let theirs = Self.byFamily(systemAddresses)
        var compared = false
        for family in 0..<2 where !ours[family].isEmpty && !theirs[family].isEmpty {
            compared = true
            if ours[family].isDisjoint(with: theirs[family]) {
                self = .mismatch
                return
            }
        }
        self = compared ? .agree : .noCommonFamily
    }

    /// Canonical address texts ([IPv4, IPv6]), so `2001:db8:0::1` equals `2001:db8::1`.
    private static func byFamily(_ addresses: [String]) -> [Set<String>] {
        var result: [Set<String>] = [[], []]
        for text in addresses {
            guard let ip = IPAddress(text) else { continue }
            let canonical = ip.unmappedIPv4 ?? ip
            result[canonical.isIPv4 ? 0 : 1].insert(canonical.description)
        }
        return result
    }
}

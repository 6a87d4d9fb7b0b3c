/// Where the proxy gets DNS answers from.
///
/// To add a provider: add a case (parsing and error messages follow), then
/// its defaults in `defaultResolverURL`/`defaultResolverIPs` if it has a
/// service, and its requirements in `ConfigurationLoader.checkConflicts`.
public enum ProviderKind: String, Sendable, Hashable, CaseIterable {
    /// The operating system's resolver (getaddrinfo) only.
    case system
    /// Alibaba Cloud HTTPDNS: API v2 (`/v2/d`, the default) or v1 (`/{account-id}/d`), per `alibabaAPI`. Needs `account-id`.
    case alibaba
    /// DNS-over-HTTPS with JSON answers (Alibaba Public DNS and Google style `/resolve`). The default.
    case json
    /// RFC 8484 DNS-over-HTTPS with DNS wire-format messages (`/dns-query`).
    case doh
    /// A domain-to-IPs list read from a URL or a file (`static-list`); other names use system DNS.
    case `static`
    /// Tencent Cloud HTTPDNS (DNSPod) `/d`: HTTPS with a token or HTTP with encrypted names
    /// (`tencent-mode`). Needs `tencent-id` and the mode's token or key.
    case tencent

    /// Parses a provider name.
    public init(parsing text: String) throws(ConfigurationError) {
        guard let kind = ProviderKind(rawValue: text) else {
            let supported = ProviderKind.allCases.map(\.rawValue).joined(separator: ", ")
            throw .malformedValue(reason: "expected one of: \(supported)")
        }
        self = kind
    }

    /// The resolver URL used when `resolver-url` is not set; nil for providers without a service.
    ///
    /// - json: Alibaba Public DNS JSON endpoint
    /// - doh: Alibaba Public DNS RFC 8484 endpoint
    /// - alibaba: the Alibaba Cloud HTTPDNS service root (the account path is appended)
    /// - tencent: the HTTPS endpoint; `TencentSettings.Mode.defaultResolverURL` has the one per mode
    public var defaultResolverURL: String? {
        switch self {
        case .json: "https://dns.alidns.com/resolve"
        case .doh: "https://dns.alidns.com/dns-query"
        case .alibaba: "https://resolvers.httpdns.aliyuncs.com"
        case .tencent: TencentSettings.Mode.https.defaultResolverURL
        case .system, .static: nil
        }
    }

    /// The bootstrap IPs the default resolver URL's host is pinned to, so the
    /// resolver is reached without system DNS. Empty for providers without a service.
    public var defaultResolverIPs: [IPAddress] {
        let texts: [String]
        switch self {
        case .json, .doh:
            texts = ["223.5.5.5", "223.6.6.6"]
        case .alibaba:
            texts = ["203.107.1.1", "203.107.1.97", "203.107.1.100", "203.119.238.240", "106.11.25.239", "59.82.99.47"]
        case .tencent:
            // The default URLs name the service by IP, so nothing is pinned; listed for completeness.
            texts = ["119.29.29.99"]
        case .system, .static:
            texts = []
        }
        // Literal constants: a typo here is caught by the unit tests.
        return texts.map { IPAddress($0)! }
    }
}

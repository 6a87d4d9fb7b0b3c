/// How provider `tencent` (Tencent Cloud HTTPDNS, DNSPod) asks its service: over HTTPS with the
/// account's token, or over plain HTTP with the name and answer encrypted with the account's key.
///
/// `token` and `key` are redacted from every description, debug description and mirror, so
/// logging or dumping this value is safe.
public struct TencentSettings: Sendable, Hashable {
    /// Transport and authentication.
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// `https://119.29.29.99/d?dn=HOST&id=ID&token=TOKEN`: clear names, TLS, token. The default.
        case https
        /// `http://119.29.29.98/d?dn=ENC&id=ID&alg=aes|des`: names and answers encrypted with `key`.
        case http

        /// The service endpoint used when `resolver-url` is not set (mainland service).
        public var defaultResolverURL: String {
            switch self {
            case .https: "https://119.29.29.99/d"
            case .http: "http://119.29.29.98/d"
            }
        }
    }

    /// The cipher of `http` mode.
    public enum Algorithm: String, Sendable, Hashable, CaseIterable {
        /// AES-128-CBC, PKCS#7, random IV sent first; key right-padded with "0" to 16 bytes. The default.
        case aes
        /// DES-ECB, PKCS#5, 8-byte key; needs OpenSSL's legacy provider.
        case des

        /// Accepted key lengths in bytes.
        public var keyLengths: ClosedRange<Int> {
            switch self {
            case .aes: 1...16
            case .des: 8...8
            }
        }
    }

    /// Default `.https`.
    public var mode: Mode
    /// The authorization id (`id`, numeric in the console); required for `tencent`. Default nil.
    public var id: String?
    /// The HTTPS token; required in `https` mode. Never shown. Default nil.
    public var token: String?
    /// The DES or AES key; required in `http` mode. Never shown. Default nil.
    public var key: String?
    /// Default `.aes`.
    public var algorithm: Algorithm
    /// ECS: answers are chosen for this address instead of ours (`ip=`). Default nil (off).
    public var ecsIP: IPAddress?

    public init(mode: Mode = .https, id: String? = nil, token: String? = nil, key: String? = nil, algorithm: Algorithm = .aes, ecsIP: IPAddress? = nil) {
        self.mode = mode
        self.id = id
        self.token = token
        self.key = key
        self.algorithm = algorithm
        self.ecsIP = ecsIP
    }
}

extension TencentSettings: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "TencentSettings(mode: \(mode.rawValue), id: \(id ?? "nil"), token: \(Self.hidden(token)), key: \(Self.hidden(key)), "
            + "algorithm: \(algorithm.rawValue), ecsIP: \(ecsIP.map { "\($0)" } ?? "nil"))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: [
            "mode": mode.rawValue, "id": id ?? "nil", "token": Self.hidden(token), "key": Self.hidden(key),
            "algorithm": algorithm.rawValue, "ecsIP": ecsIP.map { "\($0)" } ?? "nil",
        ], displayStyle: .struct)
    }

    /// Whether a secret is set stays visible, its value never.
    private static func hidden(_ value: String?) -> String {
        value == nil ? "nil" : ProxyConfiguration.redacted
    }
}

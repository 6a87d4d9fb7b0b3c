/// Alibaba Cloud HTTPDNS, API v2 (`/v2/d`): request parameters, the HMAC-SHA256 signature and the
/// optional AES encryption of the question. Parsing lives in `AlibabaHTTPDNSV2+Parsing.swift`.
public enum AlibabaHTTPDNSV2 {
    /// The `v` parameter the SDKs send.
    public static let apiVersion = "1.0"
    /// Names per batch request; the SDKs send at most this many.
    public static let maximumBatchSize = 5

    /// How the question travels (`m`): in the clear, or encrypted with the account's AES key.
    public enum Encryption: String, Sendable, Hashable, CaseIterable {
        /// `m=0`: `dn` and `q` as plain parameters.
        case none
        /// `m=1`: AES-128-CBC, PKCS#7, 16-byte IV.
        case cbc
        /// `m=2`: AES-128-GCM, 12-byte IV, 128-bit tag.
        case gcm

        public var mode: Int {
            switch self {
            case .none: 0
            case .cbc: 1
            case .gcm: 2
            }
        }

        public var ivLength: Int {
            switch self {
            case .none: 0
            case .cbc: AES128.cbcIVLength
            case .gcm: AES128.gcmIVLength
            }
        }
    }

    /// What a request needs besides the names: keys are raw bytes (hex-decoded by the caller).
    /// Never logged: the custom description hides both keys.
    public struct Credentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        public var accountID: String
        /// HMAC-SHA256 key; nil sends unsigned requests (no `exp`, no `s`).
        public var secretKey: [UInt8]?
        /// AES-128 key; required for `.cbc` and `.gcm`.
        public var aesKey: [UInt8]?
        public var encryption: Encryption

        public init(accountID: String, secretKey: [UInt8]?, aesKey: [UInt8]?, encryption: Encryption) {
            self.accountID = accountID
            self.secretKey = secretKey
            self.aesKey = aesKey
            self.encryption = encryption
        }

        public var description: String {
            "Credentials(accountID: \(accountID), secretKey: \(secretKey == nil ? "nil" : "<redacted>"), "
                + "aesKey: \(aesKey == nil ? "nil" : "<redacted>"), encryption: \(encryption.rawValue))"
        }

        public var debugDescription: String { description }

        /// `dump` and reflection show no key bytes either.
        public var customMirror: Mirror {
            Mirror(self, children: ["accountID": accountID, "signed": secretKey != nil, "encryption": encryption.rawValue], displayStyle: .struct)
        }
    }

    /// The parameters of one `/v2/d` request, in the order sent (the signature is over the sorted
    /// set). `iv` is the caller's random IV for an encrypted request (ignored for `.none`);
    /// `expiry` unix seconds (the SDKs use now + 600). Throws for an empty or oversized batch, a
    /// name containing ",", a missing AES key or a wrong IV length. The result contains the
    /// signature: never log it.
    public static func parameters(
        hosts: [String],
        query: Set<DNSRecordType>,
        credentials: Credentials,
        expiry: Int,
        iv: [UInt8]
    ) throws(WireError) -> [(String, String)] {
        guard (1...maximumBatchSize).contains(hosts.count) else {
            throw .invalidBatch("\(hosts.count) hosts, expected 1...\(maximumBatchSize)")
        }
        for host in hosts where host.isEmpty || host.contains(",") {
            throw .invalidBatch("host '\(host)' is empty or contains ','")
        }
        let names = hosts.joined(separator: ",")
        let families = AlibabaHTTPDNS.queryValue(query) ?? "4"
        var items: [(String, String)] = [("id", credentials.accountID), ("m", String(credentials.encryption.mode))]
        switch credentials.encryption {
        case .none:
            items += [("dn", names), ("q", families)]
        case .cbc, .gcm:
            guard let key = credentials.aesKey, key.count == AES128.keyLength else {
                throw .invalidBatch("an encrypted request needs a 16-byte AES key")
            }
            guard iv.count == credentials.encryption.ivLength else {
                throw .invalidBatch("the IV must be \(credentials.encryption.ivLength) bytes")
            }
            let plaintext = Array(question(names: names, families: families).utf8)
            let sealed = credentials.encryption == .cbc
                ? AES128.cbcEncrypt(key: key, iv: iv, plaintext: plaintext)
                : AES128.gcmEncrypt(key: key, iv: iv, plaintext: plaintext)
            guard let sealed else { throw .invalidBatch("encryption failed") }
            items.append(("enc", Digest.hex(iv + sealed)))
        }
        items.append(("v", apiVersion))
        if let secretKey = credentials.secretKey {
            items.append(("exp", String(expiry)))
            items.append(("s", sign(items, secretKey: secretKey)))
        }
        return items
    }

    /// `/v2/d?...` for `parameters`.
    public static func path(_ parameters: [(String, String)]) -> String {
        QueryEncoding.append(parameters, to: "/v2/d")
    }

    /// The keys the signature covers (plus every `sdns-*` key).
    static let signedKeys: Set<String> = ["id", "m", "dn", "cip", "q", "enc", "exp", "tags", "v"]

    /// Lowercase hex HMAC-SHA256 under `secretKey` of the sorted `k=v` pairs (signed keys with a
    /// non-empty value only) joined by "&". Empty only if OpenSSL fails; the service then answers
    /// with a signature error, which is reported rather than retried.
    public static func sign(_ parameters: [(String, String)], secretKey: [UInt8]) -> String {
        Digest.hmacSHA256Hex(key: secretKey, message: signedText(parameters)) ?? ""
    }

    /// The text the signature is computed over (exposed for tests and the fake service).
    public static func signedText(_ parameters: [(String, String)]) -> String {
        parameters
            .filter { (signedKeys.contains($0.0) || $0.0.hasPrefix("sdns-")) && !$0.1.isEmpty }
            .map { "\($0.0)=\($0.1)" }
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            .joined(separator: "&")
    }

    /// The encrypted question: `{"dn":"a.com,b.com","q":"4,6"}`.
    static func question(names: String, families: String) -> String {
        "{\"dn\":\(JSONText.quoted(names)),\"q\":\(JSONText.quoted(families))}"
    }
}

/// Which address families are asked for and used.
public enum IPFamily: String, Sendable, Hashable, CaseIterable {
    /// A records only.
    case ipv4
    /// AAAA records only.
    case ipv6
    /// Both, always.
    case both
    /// The families this host has a non-loopback address for (decided at start). The default.
    case auto
}

/// Which Alibaba Cloud HTTPDNS API the `alibaba` provider calls.
public enum AlibabaAPI: String, Sendable, Hashable, CaseIterable {
    /// `/{account}/d`, `sign_d`, `resolve` (MD5 signature).
    case v1
    /// `/v2/d` (HMAC-SHA256 signature, optional AES encryption) with service-IP scheduling. The default.
    case v2
}

/// How Alibaba v2 requests carry the question (`m`).
public enum AlibabaEncryption: String, Sendable, Hashable, CaseIterable {
    /// `m=0`: in the clear. The default.
    case none
    /// `m=1`: AES-128-CBC.
    case cbc
    /// `m=2`: AES-128-GCM.
    case gcm
}

/// Unit of the `ts` parameter of the Alibaba Public DNS signature. The vendor's
/// C SDK uses seconds; one documentation revision says milliseconds.
public enum DoHTimestampUnit: String, Sendable, Hashable, CaseIterable {
    case seconds
    case milliseconds
}

/// HTTP method for RFC 8484 queries (provider `doh`).
public enum DoHMethod: String, Sendable, Hashable, CaseIterable {
    /// `GET ?dns=<base64url>`: cacheable by HTTP caches. The default.
    case get
    /// `POST` with `Content-Type: application/dns-message`.
    case post
}

/// Credentials for the Alibaba Public DNS signed JSON API (provider `json`):
/// requests carry `uid`, `ak`, `ts` and `key` = SHA-256 hex of
/// uid + accessKeySecret + ts + name + accessKeyID.
///
/// `accessKeySecret` is redacted from every description, debug description
/// and mirror, so logging or dumping this value is safe.
public struct DoHSignature: Sendable, Hashable {
    /// The account id (`doh-uid`).
    public var uid: String
    /// The AccessKey ID (`doh-access-key-id`).
    public var accessKeyID: String
    /// The AccessKey secret (`doh-access-key-secret`); never shown.
    public var accessKeySecret: String

    public init(uid: String, accessKeyID: String, accessKeySecret: String) {
        self.uid = uid
        self.accessKeyID = accessKeyID
        self.accessKeySecret = accessKeySecret
    }
}

extension DoHSignature: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "DoHSignature(uid: \(uid), accessKeyID: \(accessKeyID), accessKeySecret: \(ProxyConfiguration.redacted))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: [
            "uid": uid, "accessKeyID": accessKeyID, "accessKeySecret": ProxyConfiguration.redacted,
        ], displayStyle: .struct)
    }
}

/// Where the `static` provider's list comes from.
public enum StaticListSource: Sendable, Hashable {
    /// Fetched from an http or https URL, again every `static-refresh`.
    case url(HTTPServiceURL)
    /// Read from a file, again every `static-refresh`.
    case file(path: String)

    /// A value containing "://" must be an http(s) URL; anything else is a file path.
    public init(parsing text: String) throws(ConfigurationError) {
        if text.contains("://") {
            self = .url(try HTTPServiceURL(parsing: text))
        } else {
            guard !text.isEmpty, !text.contains(where: \.isNewline) else {
                throw .malformedValue(reason: "expected an http(s) URL or a file path")
            }
            self = .file(path: text)
        }
    }
}

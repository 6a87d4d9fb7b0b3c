/// Alibaba Cloud HTTPDNS, API v1: request paths and signatures.
/// Parsing lives in `AlibabaHTTPDNS+Parsing.swift`.
public enum AlibabaHTTPDNS {
    /// The service rejects batch requests for more hosts than this.
    public static let maximumBatchSize = 5

    /// `/{account}/d?host=H[&query=4|6|4,6][&ip=..]`, or with a signature
    /// `/{account}/sign_d?host=H&t=EXP&s=SIG[&query=..][&ip=..]`.
    ///
    /// `query` empty leaves the family choice to the service (IPv4 only, per its docs).
    /// `clientIP` asks for answers as seen from that address; it is not signed.
    /// `expiry` is unix seconds (the caller's clock, typically now + 600).
    /// The result contains the signature: never log it.
    public static func path(
        accountID: String,
        host: String,
        query: Set<DNSRecordType> = [],
        clientIP: String? = nil,
        signature: (secret: String, expiry: Int)? = nil
    ) -> String {
        path(
            accountID: accountID, endpoint: "d", signedEndpoint: "sign_d", host: host, query: query,
            extra: clientIP.map { [("ip", $0)] } ?? [], signature: signature
        )
    }

    /// `/{account}/resolve?host=a,b,c[&query=..]`, or signed
    /// `/{account}/sign_resolve?host=a,b,c&t=EXP&s=SIG[&query=..]` with SIG over "a,b,c-secret-EXP".
    /// Throws for an empty batch, more than `maximumBatchSize` hosts, or a host that is
    /// empty or contains "," (it would split into two hosts on the server).
    public static func batchPath(
        accountID: String,
        hosts: [String],
        query: Set<DNSRecordType> = [],
        signature: (secret: String, expiry: Int)? = nil
    ) throws(WireError) -> String {
        guard (1...maximumBatchSize).contains(hosts.count) else {
            throw .invalidBatch("\(hosts.count) hosts, expected 1...\(maximumBatchSize)")
        }
        for host in hosts where host.isEmpty || host.contains(",") {
            throw .invalidBatch("host '\(host)' is empty or contains ','")
        }
        return path(
            accountID: accountID, endpoint: "resolve", signedEndpoint: "sign_resolve", host: hosts.joined(separator: ","),
            query: query, extra: [], signature: signature
        )
    }

    /// `/{account}/{endpoint}?host=..[&query=..][extra]`, or with a signature the signed endpoint
    /// with `t` and `s` after the host (the order the service documents).
    private static func path(
        accountID: String,
        endpoint: String,
        signedEndpoint: String,
        host: String,
        query: Set<DNSRecordType>,
        extra: [(String, String)],
        signature: (secret: String, expiry: Int)?
    ) -> String {
        var items: [(String, String)] = [("host", host)]
        var chosen = endpoint
        if let signature {
            chosen = signedEndpoint
            items.append(("t", String(signature.expiry)))
            items.append(("s", sign(host: host, secret: signature.secret, expiry: signature.expiry)))
        }
        if let families = queryValue(query) { items.append(("query", families)) }
        items += extra
        return QueryEncoding.append(items, to: "/\(QueryEncoding.pathSegment(accountID))/\(chosen)")
    }

    /// Lowercase hex MD5 of `host + "-" + secret + "-" + expiry`.
    /// Empty only if OpenSSL refuses MD5 (FIPS-only provider); the service then
    /// answers InvalidSignature, which is reported rather than retried.
    public static func sign(host: String, secret: String, expiry: Int) -> String {
        Digest.md5Hex(host + "-" + secret + "-" + String(expiry)) ?? ""
    }

    /// Whether an error code from one server is worth trying on the next server IP.
    /// Account and signature problems are the same everywhere, so rotating would
    /// only multiply the failure; throttling and unknown codes may be per server.
    public static func shouldTryNextServer(errorCode: String) -> Bool {
        !nonRetryableCodes.contains(errorCode)
    }

    static let nonRetryableCodes: Set<String> = [
        "UnsignedInterfaceDisabled", "SignatureExpired", "InvalidSignature",
        "InvalidAccount", "AccountNotExists", "InvalidDuration", "InvalidHost",
    ]

    static func queryValue(_ families: Set<DNSRecordType>) -> String? {
        switch (families.contains(.a), families.contains(.aaaa)) {
        case (true, true): return "4,6"
        case (true, false): return "4"
        case (false, true): return "6"
        case (false, false): return nil
        }
    }
}

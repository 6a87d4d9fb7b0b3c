/// Alibaba Cloud HTTPDNS service-IP scheduling (`/{account}/ss`): which IPs currently serve the
/// account, or that the service is switched off for it.
public struct AlibabaServiceSchedule: Sendable, Equatable {
    /// Canonical addresses, IPv4 first, in answer order.
    public var serviceIPs: [String]
    /// `service_status: disable`: stop querying the service until a later answer says otherwise.
    public var disabled: Bool

    public init(serviceIPs: [String], disabled: Bool) {
        self.serviceIPs = serviceIPs
        self.disabled = disabled
    }

    /// `/{account}/ss?region=R&platform=linux&sdk_version=V`, signed with
    /// `&t=EXP&n=NONCE&s=md5hex(NONCE-secret-EXP)` when a secret is given. Contains the
    /// signature: never log it.
    public static func path(
        accountID: String,
        region: String = "global",
        sdkVersion: String,
        signature: (secret: String, expiry: Int, nonce: String)?
    ) -> String {
        var items: [(String, String)] = [("region", region), ("platform", "linux"), ("sdk_version", sdkVersion)]
        if let signature {
            items.append(("t", String(signature.expiry)))
            items.append(("n", signature.nonce))
            items.append(("s", sign(secret: signature.secret, expiry: signature.expiry, nonce: signature.nonce)))
        }
        return QueryEncoding.append(items, to: "/\(QueryEncoding.pathSegment(accountID))/ss")
    }

    /// Lowercase hex MD5 of `nonce + "-" + secret + "-" + expiry`.
    public static func sign(secret: String, expiry: Int, nonce: String) -> String {
        Digest.md5Hex(nonce + "-" + secret + "-" + String(expiry)) ?? ""
    }

    /// `{"service_ip":["203.107.1.1",..],"service_ipv6":[..],"service_status":"disable"?}`.
    /// Invalid addresses are skipped; an answer that is neither disabled nor names an address
    /// is malformed (using it would leave no server to ask).
    public static func parse(_ body: [UInt8]) throws(WireError) -> AlibabaServiceSchedule {
        let object = try JSONInput.object(body)
        let disabled = JSONInput.string(object["service_status"])?.lowercased() == "disable"
        var collector = IPText.Collector()
        collector.addAll(object["service_ip"])
        collector.addAll(object["service_ipv6"])
        if collector.isEmpty, !disabled {
            if let code = JSONInput.string(object["code"]) { throw .providerError(code: code) }
            throw .malformedJSON("no usable 'service_ip' in the scheduling answer")
        }
        return AlibabaServiceSchedule(serviceIPs: collector.ipv4 + collector.ipv6, disabled: disabled)
    }
}

/// JSON DNS-over-HTTPS in the Google / Alibaba Public DNS style: URLs and signatures.
/// Parsing lives in `DoHJSON+Parsing.swift`.
public enum DoHJSON {
    /// `endpoint` plus `name=N&type=1|28[&edns_client_subnet=..]` and, when signed,
    /// `&uid=U&ak=AK&ts=TS&key=K`. Existing query items of `endpoint` are kept.
    /// `timestampMillis` is the caller's clock (milliseconds since 1970), used only when
    /// signed; the signature's `timestampUnit` decides what goes into `ts`.
    /// A signed URL contains `key`: never log it.
    public static func url(
        endpoint: String,
        name: String,
        type: DNSRecordType,
        edns: String? = nil,
        signature: DoHJSONSignature?,
        timestampMillis: Int
    ) -> String {
        var items: [(String, String)] = [("name", name), ("type", String(type.rawValue))]
        if let edns { items.append(("edns_client_subnet", edns)) }
        if let signature {
            let timestamp = signature.timestamp(unixTimeMillis: timestampMillis)
            items.append(("uid", signature.uid))
            items.append(("ak", signature.accessKeyID))
            items.append(("ts", String(timestamp)))
            items.append(("key", sign(
                uid: signature.uid,
                accessKeySecret: signature.accessKeySecret,
                timestamp: timestamp,
                name: name,
                accessKeyID: signature.accessKeyID
            )))
        }
        return QueryEncoding.append(items, to: endpoint)
    }

    /// Lowercase hex SHA-256 of `uid + accessKeySecret + timestamp + name + accessKeyID`,
    /// with `name` exactly as sent in the `name` parameter (before percent-encoding).
    public static func sign(uid: String, accessKeySecret: String, timestamp: Int64, name: String, accessKeyID: String) -> String {
        Digest.sha256Hex(uid + accessKeySecret + String(timestamp) + name + accessKeyID) ?? ""
    }
}

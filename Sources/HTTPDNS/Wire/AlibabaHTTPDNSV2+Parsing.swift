#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AlibabaHTTPDNSV2 {
    /// A `/v2/d` answer: `{"code":"success","mode":0,"data":{"cip":"..","answers":[{"dn":"a.com",
    /// "v4":{"ips":[..],"ttl":60},"v6":{"ips":[],"ttl":60,"no_ip_code":"RRNotExist"}}]}}`. With
    /// `mode` 1 or 2, `data` is base64 of IV || ciphertext [|| tag] of the same object, opened
    /// with `aesKey`. One answer per lowercased name (trailing dot dropped). A family with
    /// `no_ip_code` or no addresses contributes nothing; its ttl only counts when no family has
    /// addresses (then the answer is noData). A ttl <= 0 counts as 60. A `code` other than
    /// "success" throws `.providerError`. The answer must come in the mode that was asked for
    /// (`expected`): a clear answer to an encrypted question, or CBC where GCM was asked, would let
    /// anyone on the path forge answers, so it is refused as undecryptable.
    public static func parseAnswers(
        _ body: [UInt8], expected: Encryption = .none, aesKey: [UInt8]?
    ) throws(WireError) -> [String: WireAnswer] {
        let object = try JSONInput.object(body)
        let code = JSONInput.string(object["code"]) ?? ""
        guard code.lowercased() == "success" else {
            throw code.isEmpty ? .malformedJSON("no 'code' in the answer") : .providerError(code: code)
        }
        let data: [String: Any]
        let mode = JSONInput.int(object["mode"]) ?? 0
        guard mode == expected.mode else {
            throw mode == 0 || mode == Encryption.cbc.mode || mode == Encryption.gcm.mode
                ? .malformedJSON(undecryptableReason) : .malformedJSON("unknown mode \(mode)")
        }
        switch mode {
        case 0:
            guard let plain = object["data"] as? [String: Any] else { throw .malformedJSON("no 'data' object in the answer") }
            data = plain
        case let mode where mode == Encryption.cbc.mode || mode == Encryption.gcm.mode:
            guard let text = JSONInput.string(object["data"]) else { throw .malformedJSON("encrypted 'data' is not a string") }
            let opened = try openSealed(text, encryption: mode == 1 ? .cbc : .gcm, aesKey: aesKey)
            data = try JSONInput.object(opened)
        case let mode:
            throw .malformedJSON("unknown mode \(mode)")
        }
        let clientIP = JSONInput.string(data["cip"]).flatMap { IPText.canonical($0)?.text }
        var answers: [String: WireAnswer] = [:]
        for case let item as [String: Any] in (data["answers"] as? [Any]) ?? [] {
            guard let raw = JSONInput.string(item["dn"]) else { continue }
            let name = DNSName.normalized(raw)
            guard !name.isEmpty else { continue }
            var collector = IPText.Collector()
            var addressTTL: Int?
            var emptyTTL: Int?
            for key in ["v4", "v6"] {
                guard let family = item[key] as? [String: Any] else { continue }
                let familyTTL = ttl(family["ttl"])
                let before = collector.ipv4.count + collector.ipv6.count
                if family["no_ip_code"] == nil { collector.addAll(family["ips"]) }
                if collector.ipv4.count + collector.ipv6.count > before {
                    addressTTL = min(addressTTL ?? familyTTL, familyTTL)
                } else {
                    emptyTTL = min(emptyTTL ?? familyTTL, familyTTL)
                }
            }
            var answer = WireAnswer(
                outcome: collector.isEmpty ? .noData : .addresses,
                ipv4: collector.ipv4,
                ipv6: collector.ipv6,
                ttl: collector.isEmpty ? (emptyTTL ?? AlibabaHTTPDNS.defaultTTL) : addressTTL,
                clientIP: clientIP
            )
            if let earlier = answers[name] {
                // The same name twice (it should not happen): keep every address, the shorter ttl.
                // Merged through sets: a hostile answer repeating one name must not cost n² compares.
                let seen4 = Set(earlier.ipv4), seen6 = Set(earlier.ipv6)
                answer = WireAnswer(
                    outcome: earlier.outcome == .addresses || answer.outcome == .addresses ? .addresses : .noData,
                    ipv4: earlier.ipv4 + answer.ipv4.filter { !seen4.contains($0) },
                    ipv6: earlier.ipv6 + answer.ipv6.filter { !seen6.contains($0) },
                    ttl: min(earlier.ttl ?? AlibabaHTTPDNS.defaultTTL, answer.ttl ?? AlibabaHTTPDNS.defaultTTL),
                    clientIP: clientIP
                )
            }
            answers[name] = answer
        }
        return answers
    }

    /// base64 of IV || ciphertext [|| tag] decrypted with `aesKey`.
    static func openSealed(_ text: String, encryption: Encryption, aesKey: [UInt8]?) throws(WireError) -> [UInt8] {
        guard let aesKey else { throw .malformedJSON("encrypted answer (mode \(encryption.mode)) but no AES key is configured") }
        guard let sealed = Data(base64Encoded: text, options: .ignoreUnknownCharacters).map(Array.init),
              sealed.count > encryption.ivLength
        else { throw .malformedJSON("encrypted 'data' is not base64 of IV and ciphertext") }
        let iv = Array(sealed.prefix(encryption.ivLength))
        let rest = Array(sealed.dropFirst(encryption.ivLength))
        let plain = encryption == .cbc
            ? AES128.cbcDecrypt(key: aesKey, iv: iv, ciphertext: rest)
            : AES128.gcmDecrypt(key: aesKey, iv: iv, sealed: rest)
        guard let plain else { throw .malformedJSON(undecryptableReason) }
        return plain
    }

    /// The `.malformedJSON` reason for an answer the configured AES key does not open.
    public static let undecryptableReason = "encrypted 'data' does not decrypt with the configured AES key"

    /// What one error code means for the next server IP.
    public enum ErrorClass: Sendable, Equatable {
        /// The request itself is wrong (MissingArgument, InvalidHost, TooManyHosts,
        /// SdnsNotSupported): every server would say the same.
        case rejected
        /// Account, signature or key problems: every server would say the same; report once.
        case credentials
        /// This server can't answer now (InternalError, MethodNotAllowed, 5xx): try the next.
        case nextServer
    }

    /// Classifies an error `code` (nil: none in the body) with its HTTP status.
    public static func classify(code: String?, status: Int) -> ErrorClass {
        switch code {
        case "MissingArgument", "InvalidHost", "TooManyHosts", "SdnsNotSupported":
            return .rejected
        case "InvalidAccount", "AccountNotExists", "InvalidSignature", "SignatureExpired", "UnsignedInterfaceDisabled", "InvalidDuration":
            return .credentials
        case "InternalError", "MethodNotAllowed", "ServiceLevelDeny":
            return .nextServer
        default:
            if status >= 500 || status == 429 { return .nextServer }
            if status == 401 || status == 403 { return .credentials }
            return .rejected
        }
    }

    /// A ttl <= 0 or missing counts as 60, as the SDKs do.
    private static func ttl(_ value: Any?) -> Int {
        guard let raw = JSONInput.ttl(value), raw > 0 else { return AlibabaHTTPDNS.defaultTTL }
        return raw
    }
}

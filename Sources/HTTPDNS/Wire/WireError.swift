/// Every error the wire-format layer throws.
///
/// `description` carries the detail for logs; `shortDescription` is drawn from a
/// small fixed set so it can be used as a metrics label without blowing up
/// cardinality (an rcode never seen before maps to "rcode_other", not a new label).
public enum WireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The body is not JSON, or not JSON of the expected shape.
    case malformedJSON(String)
    /// A DNS wire message that cannot be parsed (short, bad pointer, bad lengths...).
    case malformedMessage(String)
    /// The DNS answer has the TC bit set: over DoH that means the server gave up,
    /// and a partial answer set must not be cached as if it were complete.
    case truncated
    /// A DNS message without the QR bit: a query echoed back, not an answer.
    case notAResponse
    /// The DNS message answers a different query id than the one we sent.
    case idMismatch(expected: UInt16, received: UInt16)
    /// The resolver answered with an error rcode (or JSON `Status`) other than NXDOMAIN.
    case rcode(Int)
    /// A CNAME chain that loops or is longer than we are willing to follow.
    case cnameChain(String)
    /// A host name that cannot be put on the wire (empty label, label > 63 bytes...).
    case invalidName(String)
    /// A batch request outside the provider's limits.
    case invalidBatch(String)
    /// The provider answered with its own error document (`{"code":"X"}`).
    case providerError(code: String)

    /// Label-safe, bounded set of values.
    public var shortDescription: String {
        switch self {
        case .malformedJSON: return "malformed_json"
        case .malformedMessage: return "malformed_message"
        case .truncated: return "truncated"
        case .notAResponse: return "not_a_response"
        case .idMismatch: return "id_mismatch"
        case .rcode(let code): return Self.rcodeLabel(code)
        case .cnameChain: return "cname_chain"
        case .invalidName: return "invalid_name"
        case .invalidBatch: return "invalid_batch"
        case .providerError: return "provider_error"
        }
    }

    public var description: String {
        switch self {
        case .malformedJSON(let reason):
            return "malformed JSON answer: \(reason)"
        case .malformedMessage(let reason):
            return "malformed DNS message: \(reason)"
        case .truncated:
            return "truncated DNS answer (TC bit set)"
        case .notAResponse:
            return "DNS message is not a response (QR bit clear)"
        case .idMismatch(let expected, let received):
            return "DNS answer id \(received) does not match query id \(expected)"
        case .rcode(let code):
            return "resolver answered rcode \(code) (\(Self.rcodeLabel(code).uppercased()))"
        case .cnameChain(let reason):
            return "unusable CNAME chain: \(reason)"
        case .invalidName(let reason):
            return "invalid host name: \(reason)"
        case .invalidBatch(let reason):
            return "invalid batch request: \(reason)"
        case .providerError(let code):
            return "provider error code '\(code)'"
        }
    }

    /// RFC 1035 / RFC 6895 names for the rcodes a resolver plausibly sends.
    static func rcodeLabel(_ code: Int) -> String {
        switch code {
        case 1: return "formerr"
        case 2: return "servfail"
        case 3: return "nxdomain"
        case 4: return "notimp"
        case 5: return "refused"
        case 6: return "yxdomain"
        case 7: return "yxrrset"
        case 8: return "nxrrset"
        case 9: return "notauth"
        case 10: return "notzone"
        default: return "rcode_other"
        }
    }
}

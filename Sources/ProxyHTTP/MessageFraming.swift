import NIOHTTP1
import ProxyKit

/// How the proxy frames bodies: decided once per message from what was parsed (RFC 9112 §6), so the
/// message that goes on is framed by the proxy, never by a header copied from the other side.
///
/// The codec (`HTTP1Codec`) has already rejected the worst inputs before these rules run: a request
/// whose Transfer-Encoding does not end in `chunked`, Content-Length together with
/// Transfer-Encoding, duplicate or non-numeric Content-Length, bad chunk sizes, obs-fold, bare CR
/// and control bytes in field values. These rules decide what the decoder lets through.
package enum MessageFraming {
    /// Longest request target the proxy accepts (414 beyond it; RFC 9112 §3 recommends at least 8000).
    /// The access log's limit is the same number, so a logged target is never cut.
    package static let maxRequestTargetLength = ProxyKit.maxRequestTargetLength
    /// Most header fields in a request head (431 beyond it). Heads with more are attacks or bugs;
    /// it also bounds the work of a head: every per-field step is linear in this.
    package static let maxRequestFieldCount = 256
    /// Most header fields in a response head (502 beyond it): responses carry more Set-Cookie lines.
    package static let maxResponseFieldCount = 512
    /// Largest request or response head, and largest trailer section, in bytes (NIO's default).
    package static let maxHeadBytes = 80 * 1024

    /// Whether a request head announces a body (any Transfer-Encoding, or a Content-Length other
    /// than 0): a refused request without one can be answered on a connection that stays open.
    package static func mayHaveBody(_ headers: HTTPHeaders) -> Bool {
        if headers.contains(name: "transfer-encoding") { return true }
        return headers[canonicalForm: "content-length"].contains { $0 != "0" }
    }

    /// The limits of llhttp's request decoder in the stack the codec replaced, which the
    /// differential tests compare the codec with.
    package static var requestDecoderLimits: NIOHTTPDecoderLimitConfiguration { decoderLimits(fields: maxRequestFieldCount) }

    package static var responseDecoderLimits: NIOHTTPDecoderLimitConfiguration { decoderLimits(fields: maxResponseFieldCount) }

    private static func decoderLimits(fields: Int) -> NIOHTTPDecoderLimitConfiguration {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldCount = fields
        limits.maxHeaderListSize = maxHeadBytes
        limits.maxHeaderFieldSize = maxHeadBytes
        return limits
    }

    /// The request body framing for a request with these framing fields, or why it is refused.
    ///
    /// - Transfer-Encoding on HTTP/1.0 → 400: the framing is faulty (§6.1).
    /// - Transfer-Encoding with Content-Length → 400 (§6.3, the classic smuggling vector).
    /// - An empty or malformed coding list, `chunked` applied twice or not last → 400 (§6.3).
    /// - Another coding before the final `chunked` (e.g. `gzip, chunked`) → 501: the proxy does not
    ///   implement other transfer codings, and must not pass them on over a re-chunked body (§6.1).
    /// - Content-Length: digits only (no sign, no list), at most 18 of them.
    static func requestFraming(
        transferCodings: [String]?,
        contentLengths: FieldValues,
        version: HTTPVersion
    ) throws(ProxyError) -> (framing: BodyFraming, contentLength: Int?) {
        if let codings = transferCodings {
            if version.major == 1 && version.minor == 0 {
                throw .malformed("Transfer-Encoding is not allowed in an HTTP/1.0 request (RFC 9112 §6.1)")
            }
            guard contentLengths.isEmpty else {
                throw .malformed("request has both Content-Length and Transfer-Encoding (RFC 9112 §6.3)")
            }
            guard let last = codings.last else {
                throw .malformed("empty Transfer-Encoding")
            }
            for coding in codings where !isToken(coding) {
                throw .malformed("invalid transfer coding '\(ProxyError.sanitized(coding, limit: 40))'")
            }
            guard last == "chunked", codings.dropLast().allSatisfy({ $0 != "chunked" }) else {
                throw .malformed("request Transfer-Encoding must end in chunked, applied once (RFC 9112 §6.3)")
            }
            if codings.count > 1 {
                let other = codings.dropLast().joined(separator: ", ")
                throw ProxyError(
                    .notImplemented,
                    "transfer coding '\(ProxyError.sanitized(other, limit: 40))' is not implemented; send the body with chunked alone"
                )
            }
            return (.chunked, nil)
        }
        guard !contentLengths.isEmpty else { return (.none, nil) }
        guard contentLengths.count == 1, let first = contentLengths.first, let length = parseContentLength(first) else {
            throw .malformed("invalid Content-Length '\(ProxyError.sanitized(contentLengths.all.joined(separator: ", "), limit: 40))'")
        }
        return (length == 0 ? .none : .contentLength, length)
    }

    /// 1*DIGIT, at most 18 digits (no overflow), no sign, spaces or list.
    static func parseContentLength(_ text: String) -> Int? {
        let digits = text.utf8
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// RFC 9110 §5.6.2 token: 1*tchar.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Why a response with a body cannot be relayed, or nil. The proxy re-frames every body it
    /// relays; a transfer coding other than `chunked` would have to be passed on, but the client did
    /// not ask for one (the proxy forwards no TE but `trailers`), so the origin broke the protocol.
    static func responseFramingProblem(transferCodings: [String]?, contentLengths: FieldValues, version: HTTPVersion) -> String? {
        if let codings = transferCodings {
            if version.major == 1 && version.minor == 0 {
                return "Transfer-Encoding in an HTTP/1.0 response"
            }
            if !contentLengths.isEmpty {
                return "both Content-Length and Transfer-Encoding"
            }
            if codings != ["chunked"] {
                return "unsupported transfer coding '\(ProxyError.sanitized(codings.joined(separator: ", "), limit: 40))'"
            }
            return nil
        }
        if contentLengths.count > 1 || (contentLengths.first.map { parseContentLength($0) == nil } ?? false) {
            return "invalid Content-Length"
        }
        return nil
    }

    /// The values of the fields of one name, in order, without an array for the common single
    /// value (a head's Content-Length is checked on every message).
    struct FieldValues {
        private(set) var first: String?
        private var more: [String] = []

        var count: Int { first == nil ? 0 : 1 + more.count }
        var isEmpty: Bool { first == nil }
        var all: [String] { first.map { [$0] + more } ?? [] }

        mutating func append(_ value: String) {
            if first == nil { first = value } else { more.append(value) }
        }
    }

    /// Trailer fields that may travel on. RFC 9110 §6.5.1: a trailer must not carry fields needed
    /// for framing, routing, request modifiers, authentication, response control or content
    /// processing; hop-by-hop fields never travel. Dropped here in both directions.
    package static func forwardableTrailers(_ trailers: HTTPHeaders?) -> HTTPHeaders? {
        guard let trailers, !trailers.isEmpty else { return trailers }
        var kept = HTTPHeaders()
        for (name, value) in trailers where !isForbiddenInTrailer(name) {
            kept.add(name: name, value: value)
        }
        return kept
    }

    static func isForbiddenInTrailer(_ name: String) -> Bool {
        if MessageRewriter.FieldName(name) != nil { return true }  // hop-by-hop, Host, Content-Length, Via
        let lower = name.lowercased()
        return forbiddenTrailerNames.contains(lower) || lower.hasPrefix("if-") || lower.hasPrefix("content-")
    }

    private static let forbiddenTrailerNames: Set<String> = [
        // routing and request modifiers
        "max-forwards", "expect", "range", "pragma", "cache-control",
        // authentication and state
        "authorization", "www-authenticate", "authentication-info", "proxy-authentication-info", "cookie", "set-cookie",
        // response control data
        "age", "expires", "date", "location", "retry-after", "vary", "warning",
        // how to process the content (content-* is matched by prefix)
        "trailer", "transfer-encoding",
    ]
}

import NIOHTTP1
import ProxyConfig

/// The one error type of the proxy core. Each value knows the HTTP status the client gets and a
/// human explanation for the response body; `shortDescription` is a bounded label, safe for
/// metrics and log keys (it never contains a host, address or user input).
public struct ProxyError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, without any detail: a private code behind static members.
    struct Kind: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable, CaseIterable {
            case malformedRequest = "malformed_request"
            case headersTooLarge = "headers_too_large"
            case uriTooLong = "uri_too_long"
            case originFormRequest = "origin_form_request"
            case unsupportedScheme = "unsupported_scheme"
            case methodNotAllowed = "method_not_allowed"
            case notImplemented = "not_implemented"
            case connectPortDenied = "connect_port_denied"
            case destinationDenied = "destination_denied"
            case loopDetected = "loop_detected"
            case resolveFailed = "resolve_failed"
            case connectFailed = "connect_failed"
            case connectTimeout = "connect_timeout"
            case tlsCertificateInvalid = "tls_certificate_invalid"
            case tlsHandshakeFailed = "tls_handshake_failed"
            case upstreamTimeout = "upstream_timeout"
            case upstreamClosed = "upstream_closed"
            case invalidResponse = "invalid_response"
            case requestTimeout = "request_timeout"
            case shuttingDown = "shutting_down"
            case clientNotAllowed = "client_not_allowed"
            case proxyAuthRequired = "proxy_auth_required"
            case tooManyConnections = "too_many_connections"
            case overloaded = "overloaded"
        }

        fileprivate let base: Base

        fileprivate init(_ base: Base) { self.base = base }

        static let malformedRequest = Kind(.malformedRequest)
        static let headersTooLarge = Kind(.headersTooLarge)
        static let uriTooLong = Kind(.uriTooLong)
        static let originFormRequest = Kind(.originFormRequest)
        static let unsupportedScheme = Kind(.unsupportedScheme)
        static let methodNotAllowed = Kind(.methodNotAllowed)
        static let notImplemented = Kind(.notImplemented)
        static let connectPortDenied = Kind(.connectPortDenied)
        static let destinationDenied = Kind(.destinationDenied)
        static let loopDetected = Kind(.loopDetected)
        static let resolveFailed = Kind(.resolveFailed)
        static let connectFailed = Kind(.connectFailed)
        static let connectTimeout = Kind(.connectTimeout)
        /// Every address presented a certificate that failed verification (or a pin mismatch).
        static let tlsCertificateInvalid = Kind(.tlsCertificateInvalid)
        /// The TLS handshake failed on every address for another reason (alert, reset, no common version).
        static let tlsHandshakeFailed = Kind(.tlsHandshakeFailed)
        static let upstreamTimeout = Kind(.upstreamTimeout)
        static let upstreamClosed = Kind(.upstreamClosed)
        /// The origin's response broke HTTP/1.1 framing or the exchange (it is never relayed).
        static let invalidResponse = Kind(.invalidResponse)
        static let requestTimeout = Kind(.requestTimeout)
        static let shuttingDown = Kind(.shuttingDown)
        /// The client's address is outside `--allow-client`.
        static let clientNotAllowed = Kind(.clientNotAllowed)
        /// Missing, malformed or wrong proxy credentials.
        static let proxyAuthRequired = Kind(.proxyAuthRequired)
        /// A connection limit is full.
        static let tooManyConnections = Kind(.tooManyConnections)
        /// A bounded queue is full (credential checks, pipelined requests).
        static let overloaded = Kind(.overloaded)

        /// A bounded snake_case label: safe as a metric label or log key.
        var description: String { base.rawValue }

        /// Every kind, e.g. to list the labels a metric can carry.
        static var all: [Kind] { Base.allCases.map(Kind.init) }
    }

    let kind: Kind
    /// Text for the response body and the access log.
    public let message: String
    /// What the next hop did, when it says more than `kind` (a refused or unroutable connect):
    /// the `Proxy-Status` error type (RFC 9209).
    let nextHopError: ProxyStatus.ErrorType?
    /// The origin addresses dialed before a connect or TLS failure, in order (empty otherwise):
    /// what `/errors` shows as the dialed IP of a request that never got a connection.
    var dialed: [String] = []

    init(_ kind: Kind, _ message: String, nextHopError: ProxyStatus.ErrorType? = nil) {
        self.kind = kind
        self.message = message
        self.nextHopError = nextHopError
    }

    /// A bounded label: safe as a metric label or log key.
    public var shortDescription: String { kind.description }

    public var description: String { message }

    /// The status the client is answered with.
    public var status: HTTPResponseStatus {
        switch kind.base {
        case .malformedRequest, .originFormRequest: return .badRequest
        case .headersTooLarge: return .requestHeaderFieldsTooLarge
        case .uriTooLong: return .uriTooLong
        case .unsupportedScheme, .notImplemented: return .notImplemented
        case .methodNotAllowed: return .methodNotAllowed
        case .connectPortDenied, .destinationDenied, .clientNotAllowed: return .forbidden
        case .proxyAuthRequired: return .proxyAuthenticationRequired
        case .loopDetected: return .loopDetected
        case .resolveFailed, .connectFailed, .upstreamClosed, .invalidResponse, .tlsCertificateInvalid, .tlsHandshakeFailed:
            return .badGateway
        case .connectTimeout, .upstreamTimeout: return .gatewayTimeout
        case .requestTimeout: return .requestTimeout
        case .shuttingDown, .tooManyConnections, .overloaded: return .serviceUnavailable
        }
    }
}

extension ProxyError {
    static func malformed(_ why: String) -> ProxyError { .init(.malformedRequest, "malformed request: \(why)") }
    static func originForm(_ uri: String) -> ProxyError {
        .init(
            .originFormRequest,
            "this is a forward proxy: send the absolute URI (e.g. GET http://host/path), not '\(sanitized(uri))'"
        )
    }
    static func connectPortDenied(_ port: Int, allowed: [Int]) -> ProxyError {
        .init(
            .connectPortDenied,
            "CONNECT to port \(port) is not allowed (allowed ports: \(allowed.map(String.init).joined(separator: ", ")); see --connect-ports)"
        )
    }
    static func clientNotAllowed(_ client: IPAddress) -> ProxyError {
        .init(.clientNotAllowed, "client \(client) is not allowed to use this proxy (see --allow-client)")
    }
    static func tooManyConnections(_ why: String) -> ProxyError {
        .init(.tooManyConnections, "too many connections: \(why); try again later")
    }
    static func proxyAuthRequired(_ why: String) -> ProxyError {
        .init(.proxyAuthRequired, "proxy authentication required: \(why)")
    }
    /// Seconds a client is asked to wait (Retry-After) after a 503 for a full limit.
    static let retryAfterSeconds = 2

    /// Whether the answer carries Retry-After.
    var asksToRetryLater: Bool { kind == .tooManyConnections || kind == .overloaded }

    static func loop(_ via: String) -> ProxyError {
        .init(.loopDetected, "forwarding loop detected: this request already passed through this proxy (Via: \(sanitized(via)))")
    }

    /// Client-supplied text as it may appear in an error body or log line: at most `limit`
    /// characters, printable ASCII only (other bytes, and `<`, `>`, `&`, `"`, `'` and `\`, as `\xHH`),
    /// so an echoed request target can neither inject markup nor control characters nor bulk.
    static func sanitized(_ text: String, limit: Int = 100) -> String {
        var out = ""
        out.reserveCapacity(min(text.utf8.count, limit) + 8)
        var count = 0
        for byte in text.utf8 {
            if count >= limit {
                out += "..."
                break
            }
            switch byte {
            case 0x20...0x7E where !"<>&\"'\\".utf8.contains(byte):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
            count += 1
        }
        return out
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

import HTTP1Codec
import NIOHTTP1
import ProxyConfig

/// The one error type of the proxy core. Each value knows the HTTP status the client gets and a
/// human explanation for the response body; `shortDescription` is a bounded label, safe for
/// metrics and log keys (it never contains a host, address or user input).
package struct ProxyError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, without any detail: a private code behind static members.
    package struct Kind: Sendable, Hashable, CustomStringConvertible {
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
            case routeDenied = "route_denied"
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
        package static let headersTooLarge = Kind(.headersTooLarge)
        package static let uriTooLong = Kind(.uriTooLong)
        static let originFormRequest = Kind(.originFormRequest)
        package static let unsupportedScheme = Kind(.unsupportedScheme)
        static let methodNotAllowed = Kind(.methodNotAllowed)
        package static let notImplemented = Kind(.notImplemented)
        package static let connectPortDenied = Kind(.connectPortDenied)
        package static let destinationDenied = Kind(.destinationDenied)
        /// A `route` rule denies the destination.
        package static let routeDenied = Kind(.routeDenied)
        package static let loopDetected = Kind(.loopDetected)
        package static let resolveFailed = Kind(.resolveFailed)
        package static let connectFailed = Kind(.connectFailed)
        package static let connectTimeout = Kind(.connectTimeout)
        /// Every address presented a certificate that failed verification (or a pin mismatch).
        package static let tlsCertificateInvalid = Kind(.tlsCertificateInvalid)
        /// The TLS handshake failed on every address for another reason (alert, reset, no common version).
        package static let tlsHandshakeFailed = Kind(.tlsHandshakeFailed)
        package static let upstreamTimeout = Kind(.upstreamTimeout)
        package static let upstreamClosed = Kind(.upstreamClosed)
        /// The origin's response broke HTTP/1.1 framing or the exchange (it is never relayed).
        package static let invalidResponse = Kind(.invalidResponse)
        package static let requestTimeout = Kind(.requestTimeout)
        static let shuttingDown = Kind(.shuttingDown)
        /// The client's address is outside `--allow-client`.
        package static let clientNotAllowed = Kind(.clientNotAllowed)
        /// Missing, malformed or wrong proxy credentials.
        static let proxyAuthRequired = Kind(.proxyAuthRequired)
        /// A connection limit is full.
        static let tooManyConnections = Kind(.tooManyConnections)
        /// A bounded queue is full (credential checks, pipelined requests).
        package static let overloaded = Kind(.overloaded)

        /// A bounded snake_case label: safe as a metric label or log key.
        package var description: String { base.rawValue }

        /// Every kind, e.g. to list the labels a metric can carry.
        static var all: [Kind] { Base.allCases.map(Kind.init) }
    }

    package let kind: Kind
    /// Text for the response body and the access log.
    package let message: String
    /// What the next hop did, when it says more than `kind` (a refused or unroutable connect):
    /// the `Proxy-Status` error type (RFC 9209).
    let nextHopError: ProxyStatus.ErrorType?
    /// The origin addresses dialed before a connect or TLS failure, in order (empty otherwise):
    /// what `/errors` shows as the dialed IP of a request that never got a connection.
    package var dialed: [String] = []

    package init(_ kind: Kind, _ message: String, nextHopError: ProxyStatus.ErrorType? = nil) {
        self.kind = kind
        self.message = message
        self.nextHopError = nextHopError
    }

    /// A bounded label: safe as a metric label or log key.
    package var shortDescription: String { kind.description }

    package var description: String { message }

    /// The status the client is answered with.
    package var status: HTTPResponseStatus {
        switch kind.base {
        case .malformedRequest, .originFormRequest: return .badRequest
        case .headersTooLarge: return .requestHeaderFieldsTooLarge
        case .uriTooLong: return .uriTooLong
        case .unsupportedScheme, .notImplemented: return .notImplemented
        case .methodNotAllowed: return .methodNotAllowed
        case .connectPortDenied, .destinationDenied, .routeDenied, .clientNotAllowed: return .forbidden
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
    package static func malformed(_ why: String) -> ProxyError { .init(.malformedRequest, "malformed request: \(why)") }
    package static func originForm(_ uri: String) -> ProxyError {
        .init(
            .originFormRequest,
            "this is a forward proxy: send the absolute URI (e.g. GET http://host/path), not '\(sanitized(uri))'"
        )
    }
    /// `host` matched `rule`, the `position`-th `route` rule, whose action is deny.
    package static func routeDenied(_ host: String, rule: RouteRule, position: Int) -> ProxyError {
        .init(.routeDenied, "connections to \(sanitized(host)) are denied by route rule \(position) (\(rule); see --route)")
    }
    package static func connectPortDenied(_ port: Int, allowed: [Int]) -> ProxyError {
        .init(
            .connectPortDenied,
            "CONNECT to port \(port) is not allowed (allowed ports: \(allowed.map(String.init).joined(separator: ", ")); see --connect-ports)"
        )
    }
    package static func clientNotAllowed(_ client: IPAddress) -> ProxyError {
        .init(.clientNotAllowed, "client \(client) is not allowed to use this proxy (see --allow-client)")
    }
    package static func tooManyConnections(_ why: String) -> ProxyError {
        .init(.tooManyConnections, "too many connections: \(why); try again later")
    }
    package static func proxyAuthRequired(_ why: String) -> ProxyError {
        .init(.proxyAuthRequired, "proxy authentication required: \(why)")
    }
    /// Seconds a client is asked to wait (Retry-After) after a 503 for a full limit.
    package static let retryAfterSeconds = 2

    /// Whether the answer carries Retry-After.
    package var asksToRetryLater: Bool { kind == .tooManyConnections || kind == .overloaded }

    /// A response that parsed but whose body framing the proxy cannot relay faithfully.
    package static func unrelayableResponse(_ problem: String) -> ProxyError {
        .init(.invalidResponse, "the origin sent a response that cannot be relayed: \(problem)")
    }
    /// A 101 from `host` to a request that did not ask to upgrade.
    package static func unaskedSwitch(host: String) -> ProxyError {
        .init(.invalidResponse, "\(host) switched protocols (101) without being asked to")
    }

    package static func loop(_ via: String) -> ProxyError {
        .init(.loopDetected, "forwarding loop detected: this request already passed through this proxy (Via: \(sanitized(via)))")
    }

    /// Client-supplied text as it may appear in an error body or log line: at most `limit`
    /// characters, printable ASCII only (other bytes, and `<`, `>`, `&`, `"`, `'` and `\`, as `\xHH`),
    /// so an echoed request target can neither inject markup nor control characters nor bulk.
    package static func sanitized(_ text: String, limit: Int = 100) -> String {
        HTTP1Codec.sanitized(text, limit: limit)
    }
}

/// Same kind and message (the status and headers follow from the kind).
extension ProxyError: Equatable {
    package static func == (lhs: ProxyError, rhs: ProxyError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message
    }
}

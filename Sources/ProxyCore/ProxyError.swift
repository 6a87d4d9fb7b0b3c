import NIOHTTP1

/// The one error type of the proxy core. Each value knows the HTTP status the client gets and a
/// human explanation for the response body; `shortDescription` is a bounded label, safe for
/// metrics and log keys (it never contains a host, address or user input).
public struct ProxyError: Error, Sendable, CustomStringConvertible {
    enum Kind: String, Sendable {
        case malformedRequest = "malformed_request"
        case headersTooLarge = "headers_too_large"
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
        /// Every address presented a certificate that failed verification (or a pin mismatch).
        case tlsCertificateInvalid = "tls_certificate_invalid"
        /// The TLS handshake failed on every address for another reason (alert, reset, no common version).
        case tlsHandshakeFailed = "tls_handshake_failed"
        case upstreamTimeout = "upstream_timeout"
        case upstreamClosed = "upstream_closed"
        case requestTimeout = "request_timeout"
        case shuttingDown = "shutting_down"
    }

    let kind: Kind
    /// Text for the response body and the access log.
    public let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// A bounded label: safe as a metric label or log key.
    public var shortDescription: String { kind.rawValue }

    public var description: String { message }

    /// The status the client is answered with.
    public var status: HTTPResponseStatus {
        switch kind {
        case .malformedRequest, .originFormRequest: return .badRequest
        case .headersTooLarge: return .requestHeaderFieldsTooLarge
        case .unsupportedScheme, .notImplemented: return .notImplemented
        case .methodNotAllowed: return .methodNotAllowed
        case .connectPortDenied, .destinationDenied: return .forbidden
        case .loopDetected: return .loopDetected
        case .resolveFailed, .connectFailed, .upstreamClosed, .tlsCertificateInvalid, .tlsHandshakeFailed: return .badGateway
        case .connectTimeout, .upstreamTimeout: return .gatewayTimeout
        case .requestTimeout: return .requestTimeout
        case .shuttingDown: return .serviceUnavailable
        }
    }
}

extension ProxyError {
    static func malformed(_ why: String) -> ProxyError { .init(.malformedRequest, "malformed request: \(why)") }
    static func originForm(_ uri: String) -> ProxyError {
        .init(
            .originFormRequest,
            "this is a forward proxy: send the absolute URI (e.g. GET http://host/path), not '\(uri.prefix(200))'"
        )
    }
    static func connectPortDenied(_ port: Int, allowed: [Int]) -> ProxyError {
        .init(
            .connectPortDenied,
            "CONNECT to port \(port) is not allowed (allowed ports: \(allowed.map(String.init).joined(separator: ", ")); see --connect-ports)"
        )
    }
    static func loop(_ via: String) -> ProxyError {
        .init(.loopDetected, "forwarding loop detected: this request already passed through this proxy (Via: \(via.prefix(200)))")
    }
}

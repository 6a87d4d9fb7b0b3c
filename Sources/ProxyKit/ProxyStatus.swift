/// RFC 9209 `Proxy-Status`: the standard way for a proxy to say why it answered itself, read by
/// clients, CDNs and log pipelines without knowing this proxy's own `X-Proxy-Error` names.
///
/// `httpdns-proxy; error=connection_refused; details="cannot connect to a.test port 80: ..."`
package enum ProxyStatus {
    /// The member name: this proxy in the list (RFC 9209 §2).
    static let identity = "httpdns-proxy"
    /// `details` is for people; past this it is cut (the body has the whole text).
    static let detailsLimit = 256

    /// The error types of RFC 9209 §2.3 this proxy uses.
    package enum ErrorType: String, Sendable, CaseIterable {
        case dnsError = "dns_error"
        case destinationIPProhibited = "destination_ip_prohibited"
        case destinationIPUnroutable = "destination_ip_unroutable"
        case destinationUnavailable = "destination_unavailable"
        case connectionRefused = "connection_refused"
        case connectionTerminated = "connection_terminated"
        case connectionTimeout = "connection_timeout"
        case tlsProtocolError = "tls_protocol_error"
        case tlsCertificateError = "tls_certificate_error"
        case httpRequestError = "http_request_error"
        case httpRequestDenied = "http_request_denied"
        case httpResponseIncomplete = "http_response_incomplete"
        case httpResponseHeaderSectionSize = "http_response_header_section_size"
        case httpResponseTimeout = "http_response_timeout"
        case httpProtocolError = "http_protocol_error"
        case proxyInternalResponse = "proxy_internal_response"
        case proxyConfigurationError = "proxy_configuration_error"
        case proxyLoopDetected = "proxy_loop_detected"
    }

    /// The error type for one of the proxy's own errors.
    static func errorType(of error: ProxyError) -> ErrorType {
        if let nextHop = error.nextHopError { return nextHop }
        switch error.kind {
        case .malformedRequest, .headersTooLarge, .uriTooLong, .originFormRequest, .unsupportedScheme,
             .methodNotAllowed, .notImplemented:
            return .httpRequestError
        case .connectPortDenied, .routeDenied, .clientNotAllowed, .proxyAuthRequired, .tooManyConnections:
            return .httpRequestDenied
        case .destinationDenied: return .destinationIPProhibited
        case .loopDetected: return .proxyLoopDetected
        case .resolveFailed: return .dnsError
        case .connectFailed: return .destinationUnavailable
        case .connectTimeout: return .connectionTimeout
        case .tlsCertificateInvalid: return .tlsCertificateError
        case .tlsHandshakeFailed: return .tlsProtocolError
        case .upstreamTimeout: return .httpResponseTimeout
        case .upstreamClosed: return .httpResponseIncomplete
        case .invalidResponse: return .httpProtocolError
        default:
            // requestTimeout, shuttingDown, overloaded: answered by the proxy itself.
            return .proxyInternalResponse
        }
    }

    /// The field value for an answer the proxy gives because of `error`.
    package static func fieldValue(for error: ProxyError) -> String {
        "\(identity); error=\(errorType(of: error).rawValue); details=\(quoted(error.message))"
    }

    /// An sf-string (RFC 8941 §3.3.3): printable ASCII only, `"` and `\` escaped, bounded.
    static func quoted(_ text: String) -> String {
        var out = "\""
        var count = 0
        for byte in text.utf8 {
            if count >= detailsLimit {
                out += "..."
                break
            }
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append("\\")
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case 0x20...0x7E:
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out.append("?")
            }
            count += 1
        }
        out.append("\"")
        return out
    }
}

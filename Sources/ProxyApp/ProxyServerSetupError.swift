import OpenSSLTLS

/// Why the proxy cannot start: the upstream TLS context, the proxy-auth users, the TLS listener's
/// certificates, or the trust for an `https://` parent.
package enum ProxyServerSetupError: Error, Sendable, CustomStringConvertible {
    case tls(TLSError)
    case proxyAuth(String)
    case tlsListener(TLSError)
    case parentTLS(TLSError)

    package var description: String {
        switch self {
        case .tls(let error): "cannot set up upstream TLS (check --ca-file): \(error)"
        case .proxyAuth(let error): "cannot set up proxy authentication (--proxy-auth): \(error)"
        case .tlsListener(let error): "cannot set up the TLS listener (check --tls-cert, --tls-key, --tls-client-ca): \(error)"
        case .parentTLS(let error): "cannot set up TLS to the parent proxy (check --parent-ca-file): \(error)"
        }
    }
}

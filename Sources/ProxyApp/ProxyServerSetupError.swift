import OpenSSLTLS

/// Why the proxy cannot start: the upstream TLS context, or the proxy-auth users.
package enum ProxyServerSetupError: Error, Sendable, CustomStringConvertible {
    case tls(TLSError)
    case proxyAuth(String)

    package var description: String {
        switch self {
        case .tls(let error): "cannot set up upstream TLS (check --ca-file): \(error)"
        case .proxyAuth(let error): "cannot set up proxy authentication (--proxy-auth): \(error)"
        }
    }
}

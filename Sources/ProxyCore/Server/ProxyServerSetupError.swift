import OpenSSLTLS

/// Why the proxy cannot start: the upstream TLS context, or the proxy-auth users.
public enum ProxyServerSetupError: Error, Sendable, CustomStringConvertible {
    case tls(TLSError)
    case proxyAuth(String)

    public var description: String {
        switch self {
        case .tls(let error): "cannot set up upstream TLS (check --ca-file): \(error)"
        case .proxyAuth(let error): "cannot set up proxy authentication (--proxy-auth): \(error)"
        }
    }
}

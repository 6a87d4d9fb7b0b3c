/// User inbound events fired by `OpenSSLHandler` at the client end.
public enum TLSClientEvent: Sendable, Hashable {
    /// The handshake completed and the peer was verified; buffered writes are now being encrypted.
    /// - negotiatedProtocol: the ALPN protocol the server selected, if any.
    /// - resumed: whether a cached session for the same host:port was resumed.
    /// - tlsVersion: OpenSSL's name for the version, e.g. "TLSv1.3".
    case handshakeCompleted(negotiatedProtocol: String?, resumed: Bool, tlsVersion: String)
}

/// User inbound events fired by `OpenSSLHandler` at the server end.
public enum TLSServerEvent: Sendable, Hashable {
    /// The handshake completed (and the client's certificate, when one is required, verified).
    /// - serverName: the SNI the client sent, if any.
    /// - clientCertificateName: the common name of the client's verified certificate, if any.
    /// - tlsVersion: OpenSSL's name for the version, e.g. "TLSv1.3".
    case handshakeCompleted(serverName: String?, clientCertificateName: String?, tlsVersion: String)
}

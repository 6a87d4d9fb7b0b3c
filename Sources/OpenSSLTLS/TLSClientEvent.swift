/// User inbound events fired by `OpenSSLClientHandler`.
public enum TLSClientEvent: Sendable, Hashable {
    /// The handshake completed and the peer was verified; buffered writes are now being encrypted.
    /// - negotiatedProtocol: the ALPN protocol the server selected, if any.
    /// - resumed: whether a cached session for the same host:port was resumed.
    /// - tlsVersion: OpenSSL's name for the version, e.g. "TLSv1.3".
    case handshakeCompleted(negotiatedProtocol: String?, resumed: Bool, tlsVersion: String)
}

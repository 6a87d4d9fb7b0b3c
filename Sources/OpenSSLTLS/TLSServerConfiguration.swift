/// What `TLSServerContext` presents to clients and asks of them.
public struct TLSServerConfiguration: Sendable, Hashable {
    /// One certificate the server can present: a PEM chain (leaf first) and its private key.
    public struct Identity: Sendable, Hashable {
        /// PEM file with the leaf certificate followed by any intermediates.
        public var certificateFile: String
        /// PEM file with the private key (may be the certificate file itself).
        public var keyFile: String

        public init(certificateFile: String, keyFile: String) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    /// The certificates, the first being the default: a ClientHello whose SNI names another
    /// identity's certificate (by its DNS names, wildcards included) gets that one; no SNI or an
    /// unknown name gets the first.
    public var identities: [Identity]

    /// When set, clients must present a certificate that chains to one of these PEM anchors
    /// (mutual TLS). Default: none (no certificate asked for).
    public var clientCAFile: String?

    /// Time from the connection's start to a completed handshake. Default: 10 seconds.
    public var handshakeTimeout: Duration = .seconds(10)

    public init(identities: [Identity], clientCAFile: String? = nil) {
        self.identities = identities
        self.clientCAFile = clientCAFile
    }
}

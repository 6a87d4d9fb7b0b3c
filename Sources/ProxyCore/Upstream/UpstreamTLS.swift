import NIOCore

/// What TLS origination to one upstream needs besides the shared `TLSClientContext`.
public struct UpstreamTLS: Hashable, Sendable {
    /// The client's original host: SNI (omitted for IP literals) and the identity the certificate
    /// must match (DNS SANs for names, IP SANs for IP literals). Never the dialed IP.
    public var serverName: String
    /// Base64 SHA-256 SPKI pins; when non-empty the leaf's key must match one of them.
    public var spkiPins: [String]
    /// True when a `tls-upgrade` rule turned a plain `http://` request into TLS.
    public var upgraded: Bool

    public init(serverName: String, spkiPins: [String] = [], upgraded: Bool = false) {
        self.serverName = serverName
        self.spkiPins = spkiPins
        self.upgraded = upgraded
    }
}

/// How the TLS handshake of an upstream connection went.
public struct UpstreamTLSHandshake: Sendable {
    /// A cached session for the same host:port was resumed (abbreviated handshake).
    public var resumed: Bool
    /// OpenSSL's name for the version, e.g. "TLSv1.3".
    public var version: String
    /// The ALPN protocol the origin selected, if any.
    public var negotiatedProtocol: String?
    /// From TCP connected to handshake completed.
    public var duration: TimeAmount
}

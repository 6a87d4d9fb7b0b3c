import NIOCore

/// What TLS origination to one upstream needs besides the shared `TLSClientContext`.
package struct UpstreamTLS: Hashable, Sendable {
    /// The client's original host: SNI (omitted for IP literals) and the identity the certificate
    /// must match (DNS SANs for names, IP SANs for IP literals). Never the dialed IP.
    package var serverName: String
    /// Base64 SHA-256 SPKI pins; when non-empty the leaf's key must match one of them.
    package var spkiPins: [String]
    /// True when a `tls-upgrade` rule turned a plain `http://` request into TLS.
    package var upgraded: Bool

    package init(serverName: String, spkiPins: [String] = [], upgraded: Bool = false) {
        self.serverName = serverName
        self.spkiPins = spkiPins
        self.upgraded = upgraded
    }
}

/// How the TLS handshake of an upstream connection went.
package struct UpstreamTLSHandshake: Sendable {
    /// A cached session for the same host:port was resumed (abbreviated handshake).
    package var resumed: Bool
    /// OpenSSL's name for the version, e.g. "TLSv1.3".
    package var version: String
    /// The ALPN protocol the origin selected, if any.
    package var negotiatedProtocol: String?
    /// From TCP connected to handshake completed.
    package var duration: TimeAmount
}

/// The TLS listener: the proxy spoken to over TLS (`curl -x https://`, Chromium
/// `--proxy-server=https://`), with its certificates and optional client certificates.
extension ConfigOption {
    public static let tlsListen = ConfigOption(
        name: "tls-listen", valueName: "host:port|off",
        help: "Address and port of a listener that speaks TLS to clients, then serves them as --listen does (HTTP, CONNECT, SOCKS); needs --tls-cert; 'off' disables it",
        defaultText: "off", expectation: hostPortExpectation + ", or off"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.tlsListen = try listenAddress(single(items), disabling: nil)
    }
    .table(.listening, .restart, \.tlsListen,
        example: "0.0.0.0:8443",
        needs: ["tls-cert"],
        doc: "host:port of a listener clients reach over TLS (`curl -x https://proxy:8443 --proxy-cacert ca.pem`, Chromium `--proxy-server=https://proxy:8443`, an `HTTPS_PROXY=https://...`), so Basic credentials and the requests themselves cross the network encrypted, as with squid's `https_port`. Behind the handshake it serves exactly what `listen` serves: plain HTTP requests, CONNECT, and (with `listen-socks`) SOCKS. The handshake must complete within `header-timeout`; `allow-client` and the connection limits apply as on `listen` (a refused client learns it after the handshake, in its own protocol). Needs `tls-cert`. See [TLS listener](#tls-listener).")

    public static let tlsCert = ConfigOption(
        name: "tls-cert", valueName: "path",
        help: "PEM certificate chain (leaf first) the TLS listener presents; several: the one whose names match the client's SNI, else the first; repeatable",
        defaultText: "none", expectation: "expected a file path",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.tlsCerts = try items.map { (item) throws(ConfigurationError) in try path(item) }
    }
    .table(.listening, .live, \.tlsCerts,
        example: "/etc/httpdns-proxy/proxy.pem",
        doc: "PEM files, each a certificate chain (leaf first, then intermediates) for `tls-listen`. With several, a client is given the one whose DNS names (subject alternative names, wildcards included) match the server name it sent (SNI); no SNI or no match gets the first, as nginx does. Without `tls-listen` it is not used. Read at start and again on SIGHUP and `POST /reload`: new connections get the new certificates, open ones keep theirs; a file that cannot be used stops the start (exit 64) or fails the reload (the previous certificates stay).")

    public static let tlsKey = ConfigOption(
        name: "tls-key", valueName: "path",
        help: "PEM private key of each --tls-cert, in the same order; none: each --tls-cert file also holds its key; repeatable",
        defaultText: "none", expectation: "expected a file path",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.tlsKeys = try items.map { (item) throws(ConfigurationError) in try path(item) }
    }
    .table(.listening, .live, \.tlsKeys,
        example: "/etc/httpdns-proxy/proxy.key",
        needs: ["tls-cert"],
        doc: "PEM private keys for `tls-cert`, one per certificate in the same order. None: each `tls-cert` file holds its own key after the certificates. A key that does not match its certificate stops the start (exit 64) or fails the reload. The file is read at start and on reload, and never logged.")

    public static let tlsClientCA = pathOption(
        "tls-client-ca",
        help: "PEM trust anchors for client certificates on the TLS listener: when set, every client must present a certificate they issued (mutual TLS)"
    ) { $0.tlsClientCA = $1 }
    .table(.listening, .live, \.tlsClientCA,
        example: "/etc/httpdns-proxy/clients-ca.pem",
        doc: "Mutual TLS on `tls-listen`: clients must present a certificate that chains to one of these anchors (self-signed CA certificates, PEM), or the handshake fails. A verified certificate stands in for Basic credentials on the connection's HTTP requests and CONNECTs: with `proxy-auth` they are not asked for `Proxy-Authorization`, and the access log's `user` is the certificate's common name (or its first DNS name). SOCKS5 inside TLS still authenticates with username/password when `proxy-auth` is on. The identity holds for the connection's life: a reload that changes the anchors applies to new connections. Other listeners are unaffected; without `tls-listen` it is not used. Read at start and on reload, like `tls-cert`.")
}

/// The SOCKS listener: SOCKS5 (RFC 1928, username/password RFC 1929) and SOCKS4/4a clients, whose
/// CONNECTs are dialed like an HTTP CONNECT (HTTPDNS, destination policy, connect-ports).
extension ConfigOption {
    public static let socksListen = ConfigOption(
        name: "socks-listen", valueName: "host:port|off",
        help: "Address and port of a SOCKS5/SOCKS4a listener: a CONNECT to a name is resolved through HTTPDNS like an HTTP CONNECT; 'off' disables it",
        defaultText: "off", expectation: hostPortExpectation + ", or off"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.socksListen = try listenAddress(single(items), disabling: nil)
    }
    .table(.listening, .restart, \.socksListen,
        example: "127.0.0.1:1080",
        doc: "host:port of a SOCKS listener (`socks5h://`, `curl --socks5-hostname`, `ALL_PROXY`): SOCKS5 (RFC 1928) and SOCKS4/4a, CONNECT only (BIND and UDP ASSOCIATE are answered \"command not supported\"). A CONNECT to a name goes through HTTPDNS, `connect-ports`, the destination policy and connect-by-IP exactly as an HTTP CONNECT, and is logged and counted as a tunnel (method `SOCKS5` or `SOCKS4`). With `proxy-auth`, SOCKS5 clients must use username/password (RFC 1929) against the same htpasswd, and SOCKS4, which cannot carry a password, is refused. `allow-client` and the connection limits apply (refused in SOCKS's own reply). See [SOCKS](#socks).")
}

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

extension ConfigOption {
    public static let listenSOCKS = ConfigOption(
        name: "listen-socks", valueName: "bool",
        help: "Also serve SOCKS5/SOCKS4a on --listen, told apart from HTTP by the first byte (a mixed port); false = HTTP only",
        defaultText: "true", expectation: "expected true or false (also yes/no, 1/0)",
        isBoolean: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.listenSOCKS = try boolean(single(items))
    }
    .table(.listening, .restart, \.listenSOCKS,
        example: "false",
        doc: "The proxy's own listener (`listen`) also serves SOCKS5 and SOCKS4/4a, told apart from HTTP by the first byte of the connection (0x05, 0x04; anything else is HTTP), as a \"mixed port\": `curl --socks5-hostname 127.0.0.1:8080` and `curl -x 127.0.0.1:8080` reach the same proxy. SOCKS there is served exactly as on `socks-listen`. A connection refused by `allow-client` or a connection limit waits for its first byte (at most `header-timeout`) and is refused in its own protocol (SOCKS5 \"no acceptable methods\" 05 FF, SOCKS4 0x5b, HTTP 403/503); a TLS ClientHello (0x16) gets a 400 saying the port speaks plain HTTP. `false`: every connection is HTTP, and refusals are answered at accept. See [SOCKS](#socks).")
}

extension ConfigOption {
    public static let socksSniff = ConfigOption(
        name: "socks-sniff", valueName: "bool",
        help: "A SOCKS CONNECT to an IP address is granted at once and the client's first bytes peeked: a TLS SNI or HTTP Host found there is dialed through HTTPDNS instead of the address",
        defaultText: "false", expectation: "expected true or false (also yes/no, 1/0)",
        isBoolean: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.socksSniff = try boolean(single(items))
    }
    .table(.listening, .live, \.socksSniff,
        example: "true",
        doc: "HTTPDNS for SOCKS clients that resolved the name themselves (`socks5://`, SOCKS4 without the `a`), whose local DNS may be hijacked: a CONNECT to an IP address is granted at once, without a dial, and the client's first bytes are peeked as transparent mode peeks them (a TLS ClientHello's server name, an HTTP request's Host; waiting `transparent-peek-timeout` for a first byte and `transparent-hello-timeout` for a hello that has begun). A name found there is dialed through HTTPDNS, the destination policy and connect-by-IP like any name, at the port asked for; without one (a server-speaks-first protocol, no SNI, not TLS or HTTP) the address is dialed as given. Since the client was granted the CONNECT before the dial, a failed dial can only close the connection. The access log names the peeked host, with `original_dst` (the address asked for) and `peek` (what was seen). Like mihomo's `override-destination` and sing-box's `sniff_override_destination`. See [SOCKS](#socks).")
}

/// The parent proxy: the proxy's connections to origins go through an upstream HTTP proxy, asked
/// with CONNECT for the address HTTPDNS chose (or, with `parent-resolve parent`, the name).
extension ConfigOption {
    public static let parentProxy = ConfigOption(
        name: "parent-proxy", valueName: "url",
        help: "Upstream HTTP proxy every connection goes through (CONNECT to the HTTPDNS address), unless a --route rule says direct: http://[user:password@]host:port, or https:// for TLS to the parent",
        defaultText: "none", expectation: ParentProxy.expectation,
        isSecret: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.parentProxy = try ParentProxy(parsing: single(items))
    }
    .table(.upstream, .live, \.parentProxy, redactsItself: true, // the description hides the password
        example: "http://proxy.corp.example:3128",
        doc: "An upstream HTTP proxy (squid `cache_peer`, tinyproxy `upstream`) that the proxy's own connections to origins go through: for every HTTP request, CONNECT, SOCKS and transparent connection not sent `direct` by a `route` rule, the proxy resolves the name through HTTPDNS, applies the destination policy, and asks the parent for a tunnel to the address it chose (`CONNECT 203.0.113.7:443`; plain HTTP requests go inside such a tunnel too, so `Host` reaches the origin intact, and the parent must allow CONNECT to those ports), trying the next address when the parent answers 502, 503 or 504. Credentials in the URL are sent as `Proxy-Authorization: Basic` (a `%40` for an `@` in the password) and never logged. The parent's own address is exempt from the destination policy (you named it). `https://` speaks TLS to the parent itself (squid's `https_port`), its certificate verified against the host in the URL with the system store and `parent-ca-file`; TLS to an `https://` origin then runs inside that. See [Parent proxy](#parent-proxy).")

    public static let parentResolve = ConfigOption(
        name: "parent-resolve", valueName: "who",
        help: "Who resolves names for the parent proxy: 'local' (HTTPDNS; the parent is asked CONNECT IP:port) or 'parent' (CONNECT name:port; the parent's DNS)",
        defaultText: "local", expectation: "expected one of: local, parent"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.parentResolve = try keyword(single(items), as: ParentResolve.self)
    }
    .table(.upstream, .live, \.parentResolve,
        example: "parent",
        doc: "`local`: the proxy resolves through HTTPDNS and asks the parent for `CONNECT IP:port`, so the parent's DNS is never used. `parent`: the parent resolves: tunnels are `CONNECT name:port`, and plain HTTP goes to it as ordinary proxy requests (`GET http://name/path`), for parents that refuse CONNECT to IP literals or to ports other than 443 (their 403 says to set this); the destination policy then cannot see the final address.")

    public static let parentDown = ConfigOption(
        name: "parent-down", valueName: "mode",
        help: "When the parent proxy cannot be reached: 'fail' (502) or 'direct' (dial the origin directly instead)",
        defaultText: "fail", expectation: "expected one of: fail, direct"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.parentDown = try keyword(single(items), as: ParentDown.self)
    }
    .table(.upstream, .live, \.parentDown,
        example: "direct",
        doc: "A connection whose parent proxy refuses the TCP connection or does not accept it within `connect-timeout`: `fail` answers 502 naming the parent (nothing leaves except through it); `direct` dials the origin directly instead, as if no parent were set. A parent that accepts but does not answer the CONNECT within `connect-timeout` fails that request (502) either way.")

    public static let parentCAFile = pathOption(
        "parent-ca-file",
        help: "Trust anchors (PEM) for an https:// parent proxy's certificate, in addition to the system store (default: those of --ca-file)"
    ) { $0.parentCAFile = $1 }
    .table(.upstream, .live, \.parentCAFile,
        example: "/etc/httpdns-proxy/parent-ca.pem",
        doc: "Trust anchors (PEM) for the certificate of a `parent-proxy https://...`, in addition to the system store; unset, the parent is verified as origins are (system store and `ca-file`). The certificate must name the parent's host as written in the URL (a DNS name or an IP address). An unreadable file or one without certificates stops the proxy (and fails a reload).")
}

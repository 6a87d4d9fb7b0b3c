import NIOCore

/// What a transparent connection whose name HTTPDNS cannot answer gets (`--transparent-fallback`).
public enum TransparentFallback: String, Sendable, Hashable, CaseIterable {
    /// Relayed to the address the client dialed (its own DNS answer).
    case original
    /// Closed.
    case refuse
}

/// Transparent interception (connections redirected to the proxy by netfilter) and the socket mark
/// that keeps the proxy's own connections out of the redirect.
extension ConfigOption {
    public static let transparentListen = ConfigOption(
        name: "transparent-listen", valueName: "host:port|off",
        help: "Address and port for connections redirected by netfilter (REDIRECT; see 'httpdns-proxy transparent-rules'): the original destination is read with SO_ORIGINAL_DST, the name from the TLS SNI or the HTTP Host; [::]:PORT takes IPv4 and IPv6, 'off' disables it",
        defaultText: "off", expectation: hostPortExpectation + ", or off"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.transparentListen = try listenAddress(single(items), disabling: nil)
    }
    .table(.transparent, .restart, \.transparentListen,
        example: "[::]:15001", excludes: "proxy-auth",
        doc: "host:port for connections redirected to the proxy by netfilter (`REDIRECT`, installed by [`httpdns-proxy transparent-rules`](deployment.md#transparent-interception)): the original destination is read with `SO_ORIGINAL_DST` / `IP6T_SO_ORIGINAL_DST`, the name from the TLS ClientHello's SNI or the HTTP `Host`, resolved through HTTPDNS; TLS is relayed end to end, HTTP is served like a proxied request, anything without a name goes to its original destination. `[::]:PORT` takes IPv4 and IPv6 redirects; `127.0.0.1:PORT` IPv4 only. A connection that was not redirected is closed. See [Transparent interception](#transparent-interception).")

    public static let transparentFallback = ConfigOption(
        name: "transparent-fallback", valueName: "mode",
        help: "A transparent connection whose SNI or Host name HTTPDNS cannot answer: 'original' relays it to the address the client dialed, 'refuse' closes it",
        defaultText: "original", expectation: "expected one of: original, refuse"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.transparentFallback = try keyword(single(items), as: TransparentFallback.self)
    }
    .table(.transparent, .live, \.transparentFallback,
        example: "refuse",
        doc: "A transparent connection whose SNI or Host name HTTPDNS has no answer for: `original` relays it to the address the app dialed (its own DNS answer), `refuse` closes it. Reloadable.")

    public static let transparentPeekTimeout = durationOption(
        "transparent-peek-timeout", default: "300ms",
        help: "How long a transparent connection that has sent nothing is waited for; then (a server-speaks-first protocol) it is relayed to its original destination as is"
    ) { $0.transparentPeekTimeout = $1 }
    .table(.transparent, .live, \.transparentPeekTimeout,
        example: "500ms",
        doc: "How long a transparent connection that has sent nothing is waited for. Then it is taken for a server-speaks-first protocol (SMTP, MySQL) and relayed to its original destination as is; such protocols see this much delay before their greeting. Once bytes have arrived, `transparent-hello-timeout` applies instead. Reloadable.")

    public static let transparentHelloTimeout = durationOption(
        "transparent-hello-timeout", default: "5s",
        help: "How long (from the accept) a transparent connection's ClientHello or HTTP request head that has begun is waited for (at least transparent-peek-timeout); one still incomplete then follows transparent-fallback"
    ) { $0.transparentHelloTimeout = $1 }
    .table(.transparent, .live, \.transparentHelloTimeout,
        example: "10s",
        doc: "How long, from the accept, a transparent connection whose first bytes begin a TLS ClientHello or an HTTP request head is waited for until the hello or head is complete (never less than `transparent-peek-timeout`): a slow client, a lossy link or a large post-quantum key share can spread a ClientHello over several segments and round trips. One still incomplete then follows `transparent-fallback`: `original` relays it to its original destination (peek `incomplete`, logged), `refuse` closes it. Reloadable.")

    public static let outboundMark = ConfigOption(
        name: "outbound-mark", valueName: "mark|off",
        help: "Netfilter mark (SO_MARK, 1-4294967295, decimal or 0x hex) put on every outbound socket, to origins and to the resolver service, so redirect rules can skip the proxy's own traffic (needs CAP_NET_ADMIN); 'off' sets none",
        defaultText: "off", expectation: "expected a number from 1 to 4294967295 (decimal or 0x hex), or off"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        let text = single(items)
        if text == "off" {
            config.outboundMark = nil
            return
        }
        config.outboundMark = try mark(text)
    }
    .table(.transparent, .restart, \.outboundMark,
        example: "0x100",
        doc: "Netfilter mark (`SO_MARK`, 1-4294967295, decimal or `0x` hex) put on every outbound socket, to origins and to the resolver service, so redirect rules (`transparent-rules --outbound-mark`) skip the proxy's own traffic. Needs `CAP_NET_ADMIN`; without it every connect fails. The alternative is an owner match on the uid the proxy runs as (`transparent-rules --proxy-uid`).")

    /// A netfilter mark: 1...4294967295, decimal or 0x hex.
    public static func mark(_ text: String) throws(ConfigurationError) -> UInt32 {
        let value = text.lowercased().hasPrefix("0x") ? UInt32(text.dropFirst(2), radix: 16) : UInt32(text)
        guard let value, value > 0 else { throw .malformedValue(reason: "'\(text)' is not a mark from 1 to 4294967295") }
        return value
    }

    /// A comma-separated port list (1...65535 each), sorted without duplicates.
    public static func portList(_ text: String) throws(ConfigurationError) -> [Int] {
        try ports(text.split(separator: ",").map { String($0.filter { $0 != " " }) })
    }
}

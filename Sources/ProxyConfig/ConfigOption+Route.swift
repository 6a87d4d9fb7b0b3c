/// `route`: what the proxy does with a destination, by name or IP literal, before anything is
/// resolved: the first matching rule decides (`RouteRule`).
extension ConfigOption {
    public static let route = ConfigOption(
        name: "route", valueName: "pattern=action",
        help: "Ordered rules PATTERN=ACTION (NO_PROXY syntax as --pac-bypass; action direct, parent or deny): the first rule matching a destination's name or IP literal decides, before it is resolved; none: the parent proxy when set, else direct; repeatable",
        defaultText: "none", expectation: "expected PATTERN=ACTION like *.ads.example=deny, api.corp.example=direct or 10.0.0.0/8=deny",
        isList: true, isRepeatable: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.routes = try items.map { (item) throws(ConfigurationError) in try RouteRule(parsing: item) }
    }
    .table(.access, .live, \.routes,
        example: "api.corp.example=direct,.corp.example=deny,*.ads.example=deny",
        doc: "Ordered routing rules `PATTERN=ACTION`, applied alike to HTTP requests, CONNECT, SOCKS, transparent connections and proxy-originated TLS, before the name is resolved: the first rule whose pattern matches the destination decides. Patterns are NO_PROXY syntax, read by the same matcher as `pac-bypass`: `example.com`, `.example.com`, `*.example.com` (that domain and all its subdomains), a CIDR block or IP address (destinations given as IP literals, and transparent connections dialed at their original address; names are never resolved to test them), `*`. Actions: `direct` (dialed directly), `parent` (through `parent-proxy`, which must be set) and `deny` (403, SOCKS \"not allowed\"; nothing resolved or dialed; the body names the rule). No matching rule: through the parent proxy when one is set, else direct. See [Routing rules](#routing-rules) for the order against `connect-ports`, `allow-destination` and `pac-bypass`. Flag repeatable (or comma-separated); env comma-separated; YAML list.")
}

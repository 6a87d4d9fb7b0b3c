/// Options of provider `tencent` (Tencent Cloud HTTPDNS). Each sets one part of
/// `ProxyConfiguration.tencent`; `ConfigurationLoader.checkTencent` checks they fit together.
extension ConfigOption {
    public static let tencentMode = ConfigOption(
        name: "tencent-mode", valueName: "mode",
        help: "Provider tencent: https (token, clear names over TLS, 119.29.29.99) or http (names and answers encrypted with tencent-key, 119.29.29.98)",
        defaultText: "https", expectation: "expected one of: https, http"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.tencent.mode = try keyword(single(items), as: TencentSettings.Mode.self)
    }
    .table(.resolver, .resolverService, \.tencent.mode,
        example: "http",
        doc: "How `tencent` asks: `https` (clear names over TLS, `tencent-token`) or `http` (names and answers encrypted with `tencent-key`).")

    public static let tencentID = ConfigOption(
        name: "tencent-id", valueName: "id",
        help: "Tencent Cloud HTTPDNS authorization ID (required for provider tencent)",
        defaultText: "none", expectation: "expected an id like 1234"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.tencent.id = try identifier(single(items))
    }
    .table(.resolver, .resolverService, \.tencent.id,
        example: "1234",
        doc: "Tencent Cloud HTTPDNS authorization ID; required for `tencent`.")

    public static let tencentToken = ConfigOption(
        name: "tencent-token", valueName: "token",
        help: "Tencent Cloud HTTPDNS HTTPS token (required for tencent-mode https; never logged)",
        defaultText: "none", expectation: "expected non-empty text without control characters",
        isSecret: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.tencent.token = try secretText(single(items))
    }
    .table(.resolver, .resolverService, \.tencent.token,
        example: "change-me",
        doc: "Secret, never logged: the HTTPS token; required for `tencent-mode` `https`.")

    public static let tencentKey = ConfigOption(
        name: "tencent-key", valueName: "key",
        help: "Tencent Cloud HTTPDNS AES or DES encryption key (required for tencent-mode http; never logged)",
        defaultText: "none", expectation: "expected non-empty text without control characters",
        isSecret: true
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.tencent.key = try secretText(single(items))
    }
    .table(.resolver, .resolverService, \.tencent.key,
        example: "change-me-key",
        doc: "Secret, never logged: the AES key (1-16 characters) or DES key (8 characters) from the console; required for `tencent-mode` `http`.")

    public static let tencentAlg = ConfigOption(
        name: "tencent-alg", valueName: "alg",
        help: "Cipher of tencent-mode http: aes (AES-128-CBC, key up to 16 characters) or des (DES-ECB, 8-character key; needs OpenSSL's legacy provider)",
        defaultText: "aes", expectation: "expected one of: aes, des"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.tencent.algorithm = try keyword(single(items), as: TencentSettings.Algorithm.self)
    }
    .table(.resolver, .resolverService, \.tencent.algorithm,
        example: "des",
        doc: "Cipher of `tencent-mode` `http`: `aes` (AES-128-CBC) or `des` (DES-ECB; needs OpenSSL's legacy provider, checked at start).")

    public static let tencentECSIP = ConfigOption(
        name: "tencent-ecs-ip", valueName: "ip",
        help: "Provider tencent: ask for answers suited to this client address (EDNS Client Subnet, the ip= parameter) instead of the proxy's own",
        defaultText: "none", expectation: "expected an IP address like 1.2.3.4 or 2400:3200::1"
    ) { (config: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
        config.tencent.ecsIP = try IPAddress(parsing: single(items))
    }
    .table(.resolver, .resolverService, \.tencent.ecsIP, default: "none (off)",
        example: "203.0.113.7",
        doc: "EDNS Client Subnet for `tencent`: answers are chosen for this address instead of the proxy's own (sent encrypted in http mode).")
}

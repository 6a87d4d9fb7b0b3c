import Testing
@testable import ProxyConfig

@Suite struct TLSUpgradeTests {
    @Test(arguments: [
        ("api.example.com", "api.example.com", nil, "api.example.com"),
        ("API.Example.COM.:8080", "api.example.com", 8080, "api.example.com:8080"),
        ("*.example.com", "*.example.com", nil, "*.example.com"),
        ("*.Example.com:9443", "*.example.com", 9443, "*.example.com:9443"),
        ("192.0.2.10", "192.0.2.10", nil, "192.0.2.10"),
        ("[2001:DB8:0::1]:8443", "2001:db8::1", 8443, "[2001:db8::1]:8443"),
        ("[::1]", "::1", nil, "[::1]"),
    ] as [(String, String, Int?, String)])
    func parses(text: String, host: String, port: Int?, description: String) throws {
        let rule = try TLSUpgradeRule(parsing: text)
        #expect(rule.host == host)
        #expect(rule.port == port)
        #expect(rule.description == description)
        #expect(TLSUpgradeRule(description) == rule)
    }

    @Test(arguments: ["", ":8080", "api.example.com:", "api.example.com:0", "api.example.com:65536", "2001:db8::1", "[2001:db8::1]8443",
                      "*", "*.", "a*.example.com", "*.*.example.com", "api.example.com/path", "http://api.example.com", "[192.0.2.1]"])
    func rejects(text: String) {
        #expect(TLSUpgradeRule(text) == nil, "\(text)")
    }

    private static let rules: [String] = ["*.example.org", "api.example.com", "api.example.com:8080", "*.example.org:9000", "192.0.2.10", "[2001:db8::1]:8443"]

    @Test(arguments: [
        ("api.example.com", 80, 443),
        ("API.EXAMPLE.COM.", 80, 443),
        ("api.example.com", 8080, 8080),
        ("api.example.com", 8081, nil),
        ("api.example.com", 443, nil),
        ("www.example.com", 80, nil),
        ("example.com", 80, nil),
        ("a.example.org", 80, 443),
        ("A.Example.Org", 80, 443),
        ("x.example.org", 9000, 9000),
        ("x.example.org", 8080, nil),
        ("a.b.example.org", 80, nil),
        ("example.org", 80, nil),
        ("badexample.org", 80, nil),
        ("192.0.2.10", 80, 443),
        ("[2001:db8::1]", 8443, 8443),
        ("2001:db8:0:0::1", 8443, 8443),
        ("2001:db8::1", 80, nil),
    ] as [(String, Int, Int?)])
    func matching(host: String, port: Int, expected: Int?) throws {
        let config = try load(env: ["HTTPDNS_PROXY_TLS_UPGRADE": Self.rules.joined(separator: ",")])
        #expect(config.tlsUpgrade.count == Self.rules.count)
        #expect(config.tlsUpgradeTarget(host: host, port: port) == expected)
    }

    @Test func exactHostBeatsWildcard() {
        // Both rules match http://api.example.com:80; the exact one (TLS on port 80) wins although listed second.
        var config = ProxyConfiguration.defaults
        config.tlsUpgrade = [TLSUpgradeRule(host: "*.example.com"), TLSUpgradeRule(host: "api.example.com", port: 80)]
        #expect(config.tlsUpgradeTarget(host: "api.example.com", port: 80) == 80)
        #expect(config.tlsUpgradeTarget(host: "www.example.com", port: 80) == 443)
        config.tlsUpgrade = []
        #expect(config.tlsUpgradeTarget(host: "api.example.com", port: 80) == nil)
    }

    @Test func fileFlagAndEnvironmentPrecedence() throws {
        let files = ["p.yaml": "tls-upgrade:\n  - api.example.com\n  - '*.example.org'\n"]
        let fromFile = try load(flags: ["config": ["p.yaml"]], files: files)
        #expect(fromFile.tlsUpgrade.map(\.description) == ["api.example.com", "*.example.org"])
        let fromEnv = try load(flags: ["config": ["p.yaml"]], env: ["HTTPDNS_PROXY_TLS_UPGRADE": "b.example"], files: files)
        #expect(fromEnv.tlsUpgrade.map(\.description) == ["b.example"])
        let fromFlag = try load(flags: ["config": ["p.yaml"], "tls-upgrade": ["c.example:8080", "c.example:8080"]],
                                env: ["HTTPDNS_PROXY_TLS_UPGRADE": "b.example"], files: files)
        #expect(fromFlag.tlsUpgrade.map(\.description) == ["c.example:8080"])
        #expect(fromFlag.tlsUpgradeTarget(host: "api.example.com", port: 80) == nil)
    }
}

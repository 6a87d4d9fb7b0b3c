import Testing
@testable import ProxyConfig

/// `resolver-token`: the pod side of a node tier's `doh-token`.
@Suite struct ResolverTokenOptionTests {
    private static let token = "pod-to-node-T0ken"

    @Test func loadsFromEachSourceAndIsRedactedEverywhere() throws {
        for config in [
            try load(env: ["HTTPDNS_PROXY_RESOLVER_TOKEN": Self.token]),
            try load(flags: ["resolver-token": [Self.token], "provider": ["doh"]]),
            try load(flags: ["config": ["p.yaml"]], files: ["p.yaml": "provider: doh\nresolver-token: \(Self.token)\n"]),
        ] {
            #expect(config.resolverToken == Self.token)
            var dumped = ""
            dump(config, to: &dumped)
            for text in [String(describing: config), String(reflecting: config), dumped, config.checkReport] {
                #expect(!text.contains(Self.token), "token leaked: \(text)")
            }
            #expect(config.checkReport.contains("\nresolver-token: <redacted>"), "\(config.checkReport)")
        }
        #expect(ProxyConfiguration.defaults.checkReport.contains("\nresolver-token: none  # default"))
    }

    @Test func theFallbackProviderNeverGetsTheToken() throws {
        let config = try load(flags: [
            "provider": ["doh"], "resolver-url": ["http://127.0.0.1:8053/dns-query"], "resolver-token": [Self.token],
            "fallback-provider": ["json"],
        ])
        let second = try #require(config.fallbackConfiguration)
        #expect(second.provider == .json)
        #expect(second.resolverToken == nil)
        #expect(config.resolverToken == Self.token)
    }

    /// The fallback reaches its service without system DNS: its own pins (none of the first's),
    /// and a default URL keeps its provider's default pins.
    @Test func theFallbackProviderTakesItsOwnPins() throws {
        let pinned = try load(flags: [
            "provider": ["doh"], "resolver-url": ["http://node.test:8053/dns-query"], "resolver-ip": ["10.0.0.2"],
            "fallback-provider": ["json"], "fallback-resolver-url": ["https://vendor.example.test/resolve"],
            "fallback-resolver-ip": ["192.0.2.7", "2001:db8::7"],
        ])
        let second = try #require(pinned.fallbackConfiguration)
        #expect(second.effectiveResolverURL == "https://vendor.example.test/resolve")
        #expect(second.effectiveResolverIPs.map(\.description) == ["192.0.2.7", "2001:db8::7"])
        #expect(pinned.effectiveResolverIPs.map(\.description) == ["10.0.0.2"])

        let byDefault = try load(flags: ["provider": ["doh"], "resolver-url": ["http://node.test:8053/dns-query"], "fallback-provider": ["json"]])
        let defaultSecond = try #require(byDefault.fallbackConfiguration)
        #expect(defaultSecond.effectiveResolverIPs.map(\.description) == ["223.5.5.5", "223.6.6.6"])

        let bad = try #require(loadError(flags: ["fallback-resolver-ip": ["vendor.example.test"]]))
        #expect(bad.description.contains("--fallback-resolver-ip"), "\(bad)")
    }

    @Test func otherProvidersRefuseItWithoutShowingIt() throws {
        for provider in ["alibaba", "tencent", "static", "system"] {
            let error = try #require(loadError(
                flags: ["provider": [provider], "account-id": ["1"], "tencent-id": ["1"], "tencent-token": ["t"], "static-list": ["/l.json"]],
                env: ["HTTPDNS_PROXY_RESOLVER_TOKEN": Self.token]
            ))
            #expect(error.description.contains("--resolver-token (from environment variable HTTPDNS_PROXY_RESOLVER_TOKEN)"), "\(error)")
            #expect(error.description.contains("doh and json providers only"), "\(error)")
            #expect(!error.description.contains(Self.token), "\(error)")
        }
    }

    @Test(arguments: ["", "has space", "tab\there", "new\nline", "caf\u{E9}", String(repeating: "x", count: 4097)])
    func badTokensAreRefusedWithoutShowingThem(bad: String) throws {
        // (An empty variable counts as unset.)
        let fromEnv = bad.isEmpty ? [] : [loadError(env: ["HTTPDNS_PROXY_RESOLVER_TOKEN": bad])]
        for error in fromEnv + [loadError(flags: ["resolver-token": [bad]])] {
            let error = try #require(error)
            #expect(error.description.contains("expected a token of printable characters without spaces"), "\(error)")
            if bad.count > 3 { #expect(!error.description.contains(bad), "\(error)") }
        }
    }

    @Test func aChangedTokenIsAProviderChange() {
        var changed = ProxyConfiguration.defaults
        changed.resolverToken = Self.token
        #expect(changed.differingOptions(from: .defaults) == ["resolver-token"])
    }
}

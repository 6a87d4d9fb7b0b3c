import NIOCore
import Testing
@testable import ProxyConfig

@Suite struct ConfigOptionTests {
    @Test func environmentNamesAreUpperSnakeWithPrefix() {
        #expect(ConfigOption.listen.environmentVariable == "HTTPDNS_PROXY_LISTEN")
        #expect(ConfigOption.allowDestination.environmentVariable == "HTTPDNS_PROXY_ALLOW_DESTINATION")
        #expect(ConfigOption.config.environmentVariable == "HTTPDNS_PROXY_CONFIG")
        #expect(ConfigOption.clientIdleTimeout.environmentVariable == "HTTPDNS_PROXY_CLIENT_IDLE_TIMEOUT")
        #expect(ConfigOption.listen.flag == "--listen")
        #expect(ConfigOption.config.fileKey == nil)
        #expect(ConfigOption.via.fileKey == "via")
    }

    @Test func registryNamesAreUniqueKebabCase() {
        let names = ConfigOption.all.map(\.name)
        #expect(Set(names).count == names.count)
        for name in names {
            #expect(name.allSatisfy { $0.isLowercase || $0 == "-" }, "\(name)")
        }
        #expect(ConfigOption.all.filter(\.isSecret).map(\.name) == ["resolver-token", "secret", "aes-key", "doh-access-key-secret", "tencent-token", "tencent-key", "parent-proxy", "proxy-auth", "doh-token"])
        #expect(ConfigOption.all.filter(\.isRepeatable).map(\.name) == ["tls-cert", "tls-key", "resolver-ip", "system-dns-domain", "tls-upgrade", "allow-destination", "route", "allow-client", "proxy-auth", "pac-bypass", "dns-forward-zone", "dns-upstream", "fallback-resolver-ip"])
        #expect(Set(ConfigOption.all.filter(\.isList).map(\.name))
            == ["pac-bypass", "tls-cert", "tls-key", "resolver-ip", "keepalive-domains", "preload", "allow-destination", "route", "connect-ports", "tls-upgrade", "allow-client", "proxy-auth", "probe-domains", "system-dns-domain", "dns-forward-zone", "dns-upstream", "fallback-resolver-ip"])
        #expect(ConfigOption.all.filter { !$0.isAllowedInFile }.map(\.name) == ["config"])
        #expect(ConfigOption.all.filter(\.isMapping).map(\.name) == ["spki-pins"])
        #expect(ConfigOption.all.filter { !$0.isAllowedInFlagsAndEnvironment }.map(\.name) == ["spki-pins"])
    }

    @Test func everyFlagOfTheTableIsParsed() throws {
        for option in ConfigOption.all where option.isAllowedInFlagsAndEnvironment {
            #expect(try flags([option.flag, "v"]) == [option.name: ["v"]] || option.isBoolean, "\(option.flag)")
            #expect(try flags([option.flag + "=v"]) == [option.name: ["v"]], "\(option.flag)")
            #expect(try flags([option.flag + "="]) == [option.name: [""]], "\(option.flag)")
        }
    }

    @Test func theCommandLineGivesNothingWhenNoFlags() throws {
        #expect(try CommandLineArguments(parsing: []) == CommandLineArguments())
        #expect(try load(flags: flags([])) == .defaults)
    }

    @Test func repeatableFlagCollectsValuesAndLoads() throws {
        let given = try flags(["--allow-destination", "10.0.0.0/8", "--allow-destination=fd00::/8", "--listen", "127.0.0.1:0"])
        #expect(given["allow-destination"] == ["10.0.0.0/8", "fd00::/8"])
        let config = try ConfigurationLoader.load(flagValues: given, environment: ["HTTPDNS_PROXY_LISTEN": "127.0.0.1:1"])
        #expect(config.allowDestinations == [CIDR("10.0.0.0/8")!, CIDR("fd00::/8")!])
        #expect(config.listen == HostPort(host: "127.0.0.1", port: 0))
    }

    @Test func aSingleValuedFlagGivenAgainKeepsTheLast() throws {
        #expect(try flags(["--via", "a", "--via", "b"]) == ["via": ["b"]])
        // A list that is not repeatable is replaced, not extended, as ArgumentParser did.
        #expect(try flags(["--connect-ports", "443", "--connect-ports", "8443,9443"]) == ["connect-ports": ["8443,9443"]])
    }

    @Test func defaultsAreTheDocumentedOnes() {
        let d = ProxyConfiguration.defaults
        #expect(d.listen == HostPort("127.0.0.1:8080"))
        #expect(d.adminListen == HostPort("127.0.0.1:8081"))
        #expect(d.provider == .json)
        #expect(d.resolverURL == nil)
        #expect(d.resolverIPs == [])
        #expect(d.accountID == nil)
        #expect(d.secret == nil)
        #expect(d.alibabaAPI == .v2)
        #expect(d.alibabaEncryption == .none)
        #expect(d.aesKey == nil)
        #expect(d.schedulerRefresh == .hours(1))
        #expect(d.dohSignature == nil)
        #expect(d.dohTimestampUnit == .seconds)
        #expect(d.dohMethod == .get)
        #expect(d.resolverToken == nil)
        #expect(d.staticList == nil)
        #expect(d.staticRefresh == .seconds(300))
        #expect(d.resolverTimeout == .seconds(3))
        #expect(d.resolverCAFile == nil)
        #expect(d.hostsFile == nil)
        #expect(d.ipFamily == .auto)
        #expect(d.minTTL == .zero)
        #expect(d.maxTTL == .seconds(3600))
        #expect(d.negativeTTL == .seconds(30))
        #expect(d.maxStale == .hours(1))
        #expect(d.cacheSize == 10000)
        #expect(d.cacheImmutable == false)
        #expect(d.cacheFile == nil)
        #expect(d.keepaliveDomains == [])
        #expect(d.preload == [])
        #expect(d.connectPorts == [443])
        #expect(d.allowDestinations == [])
        #expect(d.caFile == nil)
        #expect(d.tlsUpgrade == [])
        #expect(d.spkiPins == [:])
        // The zero-config resolver: Alibaba Public DNS over DoH JSON, reached by IP.
        #expect(d.effectiveResolverURL == "https://dns.alidns.com/resolve")
        #expect(d.effectiveResolverIPs == [IPAddress("223.5.5.5")!, IPAddress("223.6.6.6")!])
        #expect(d.logLevel == .info)
        #expect(d.logFormat == .json)
        #expect(d.accessLog == .stdout)
        #expect(d.networkMonitor)
        #expect(!d.accessLogReferer)
        #expect(d.connectTimeout == .seconds(10))
        #expect(d.ipBackoff == .seconds(30))
        #expect(d.ipBackoffMax == .minutes(5))
        #expect(d.upstreamTimeout == .seconds(60))
        #expect(d.headerTimeout == .seconds(30))
        #expect(d.clientIdleTimeout == .seconds(60))
        #expect(d.tunnelIdleTimeout == .seconds(300))
        #expect(d.poolMaxIdle == 64)
        #expect(d.poolIdleTimeout == .seconds(30))
        #expect(d.shutdownGrace == .seconds(20))
        #expect(d.viaPseudonym == "httpdns-proxy")
        #expect(d.threads == 0)
        #expect(d.configFile == nil)
    }

    @Test func theDefaultsAreTheEntriesDefaultTexts() throws {
        // Each default text, given through the environment, is what `defaults` holds.
        for option in ConfigOption.all where option.defaultText != "none" && !option.isMapping {
            let config = try load(env: [option.environmentVariable: option.defaultText])
            #expect(valueText(config, option) == valueText(.defaults, option), "\(option.name)")
        }
    }

    @Test func bareBooleanFlagsMeanTrue() throws {
        for option in ConfigOption.all where option.isBoolean {
            #expect(try flags([option.flag]) == [option.name: ["true"]], "\(option.flag)")
            #expect(try flags([option.flag, "no"]) == [option.name: ["no"]], "\(option.flag)")
        }
        #expect(try flags(["--cache-immutable", "--listen", "127.0.0.1:1"]) == ["cache-immutable": ["true"], "listen": ["127.0.0.1:1"]])
        #expect(try flags(["--cache-immutable", "false"]) == ["cache-immutable": ["false"]])
        #expect(try flags(["--cache-immutable=no"]) == ["cache-immutable": ["no"]])
        // A following word that is no boolean is not taken: `resolve --cache-immutable a.example`.
        let resolve = try CommandLineArguments(parsing: ["--cache-immutable", "a.example"])
        #expect(resolve.flagValues == ["cache-immutable": ["true"]] && resolve.positional == ["a.example"])
        #expect(try load(flags: flags(["--cache-immutable"])).cacheImmutable)
        #expect(try !load(flags: flags(["--cache-immutable", "0"])).cacheImmutable)
    }

    @Test(arguments: [("true", true), ("TRUE", true), ("yes", true), ("1", true), ("false", false), ("No", false), ("0", false)])
    func cacheImmutableAcceptsBooleanWords(text: String, expected: Bool) throws {
        #expect(try load(env: ["HTTPDNS_PROXY_CACHE_IMMUTABLE": text]).cacheImmutable == expected)
        // YAML 1.1 booleans arrive as text too.
        #expect(try load(flags: ["config": ["f"]], files: ["f": "cache-immutable: \(text)"]).cacheImmutable == expected)
    }

    @Test func repeatableResolverIPAndTLSUpgradeFlags() throws {
        let config = try load(flags: flags([
            "--resolver-ip", "192.0.2.1", "--resolver-ip", "2001:db8::1,192.0.2.2",
            "--tls-upgrade", "api.example.com", "--tls-upgrade", "*.example.org:8443",
        ]))
        #expect(config.resolverIPs.map(\.description) == ["192.0.2.1", "2001:db8::1", "192.0.2.2"])
        #expect(config.tlsUpgrade == [TLSUpgradeRule(host: "api.example.com"), TLSUpgradeRule(host: "*.example.org", port: 8443)])
    }

    @Test func effectiveThreadsUsesCoresForZero() {
        var config = ProxyConfiguration.defaults
        #expect(config.effectiveThreads == System.coreCount)
        #expect(config.effectiveThreads >= 1)
        config.threads = 3
        #expect(config.effectiveThreads == 3)
    }

    @Test func providerAndEnumsRoundTrip() throws {
        for kind in ProviderKind.allCases {
            #expect(try ProviderKind(parsing: kind.rawValue) == kind)
        }
        #expect(ProviderKind.allCases.map(\.rawValue) == ["system", "alibaba", "json", "doh", "static", "tencent"])
        #expect(throws: ConfigurationError.malformedValue(reason: "expected one of: system, alibaba, json, doh, static, tencent")) {
            try ProviderKind(parsing: "dnspod")
        }
        #expect(try AccessLogDestination(parsing: "/tmp/a.log") == .file(path: "/tmp/a.log"))
        #expect(LogLevel.trace < LogLevel.critical)
        #expect(LogLevel.allCases.map(\.rawValue) == ["trace", "debug", "info", "notice", "warning", "error", "critical"])
    }
}

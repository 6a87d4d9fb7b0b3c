import ArgumentParser
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
        #expect(names.count == 89)
        for name in names {
            #expect(name.allSatisfy { $0.isLowercase || $0 == "-" }, "\(name)")
        }
        #expect(ConfigOption.all.filter(\.isSecret).map(\.name) == ["resolver-token", "secret", "aes-key", "doh-access-key-secret", "tencent-token", "tencent-key", "proxy-auth", "doh-token"])
        #expect(ConfigOption.all.filter(\.isRepeatable).map(\.name) == ["resolver-ip", "system-dns-domain", "tls-upgrade", "allow-destination", "allow-client", "proxy-auth", "pac-bypass", "dns-forward-zone", "dns-upstream", "fallback-resolver-ip"])
        #expect(Set(ConfigOption.all.filter(\.isList).map(\.name))
            == ["pac-bypass", "resolver-ip", "keepalive-domains", "preload", "allow-destination", "connect-ports", "tls-upgrade", "allow-client", "proxy-auth", "probe-domains", "system-dns-domain", "dns-forward-zone", "dns-upstream", "fallback-resolver-ip"])
        #expect(ConfigOption.all.filter { !$0.isAllowedInFile }.map(\.name) == ["config"])
        #expect(ConfigOption.all.filter(\.isMapping).map(\.name) == ["spki-pins"])
        #expect(ConfigOption.all.filter { !$0.isAllowedInFlagsAndEnvironment }.map(\.name) == ["spki-pins"])
    }

    @Test func serveOptionsDeclaresExactlyTheRegistryFlags() throws {
        // Every registry option with a flag parses to itself through ServeOptions...
        for option in ConfigOption.all where option.isAllowedInFlagsAndEnvironment {
            let parsed = try ServeOptions.parse([option.flag, "v"])
            #expect(parsed.givenValues == [option.name: ["v"]], "\(option.flag)")
        }
        // ...and ServeOptions has no flag the registry lacks.
        let help = ServeOptions.helpMessage(columns: 500)
        let helpFlags = Set(help.split(whereSeparator: { !($0.isLetter || $0 == "-") })
            .filter { $0.hasPrefix("--") }.map(String.init))
        #expect(helpFlags == Set(ConfigOption.all.filter(\.isAllowedInFlagsAndEnvironment).map(\.flag) + ["--help"]))
    }

    @Test func helpShowsRegistryTextDefaultAndEnvironment() {
        let help = ServeOptions.helpMessage(columns: 1000)
        for option in ConfigOption.all where option.isAllowedInFlagsAndEnvironment {
            #expect(help.contains(option.help), "\(option.name)")
            #expect(help.contains(option.environmentVariable), "\(option.name)")
            if option.defaultText != "none" {
                #expect(help.contains("(default: \(option.defaultText))"), "\(option.name)")
            }
        }
    }

    @Test func serveOptionsGivesNothingWhenNoFlags() throws {
        #expect(try ServeOptions.parse([]).givenValues.isEmpty)
        #expect(try ConfigurationLoader.load(flags: ServeOptions.parse([]), environment: [:]) == .defaults)
    }

    @Test func repeatableFlagCollectsValuesAndLoads() throws {
        let options = try ServeOptions.parse(["--allow-destination", "10.0.0.0/8", "--allow-destination", "fd00::/8", "--listen", "127.0.0.1:0"])
        #expect(options.givenValues["allow-destination"] == ["10.0.0.0/8", "fd00::/8"])
        let config = try ConfigurationLoader.load(flags: options, environment: ["HTTPDNS_PROXY_LISTEN": "127.0.0.1:1"])
        #expect(config.allowDestinations == [CIDR("10.0.0.0/8")!, CIDR("fd00::/8")!])
        #expect(config.listen == HostPort(host: "127.0.0.1", port: 0))
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

    @Test func registryDefaultTextsParseToTheDefaults() throws {
        // Start from values that differ from every default, then apply each option's default text.
        var config = try load(env: [
            "HTTPDNS_PROXY_LISTEN": "127.0.0.1:1", "HTTPDNS_PROXY_ADMIN_LISTEN": "off",
            "HTTPDNS_PROXY_CONNECT_PORTS": "1", "HTTPDNS_PROXY_ALLOW_DESTINATION": "1.2.3.4",
            "HTTPDNS_PROXY_LOG_LEVEL": "error", "HTTPDNS_PROXY_LOG_FORMAT": "text", "HTTPDNS_PROXY_ACCESS_LOG": "off",
            "HTTPDNS_PROXY_CONNECT_TIMEOUT": "1ms", "HTTPDNS_PROXY_IP_BACKOFF": "1ms", "HTTPDNS_PROXY_IP_BACKOFF_MAX": "2ms", "HTTPDNS_PROXY_UPSTREAM_TIMEOUT": "1ms", "HTTPDNS_PROXY_HEADER_TIMEOUT": "1ms",
            "HTTPDNS_PROXY_CLIENT_IDLE_TIMEOUT": "1ms", "HTTPDNS_PROXY_TUNNEL_IDLE_TIMEOUT": "1ms",
            "HTTPDNS_PROXY_POOL_MAX_IDLE": "1", "HTTPDNS_PROXY_POOL_IDLE_TIMEOUT": "1ms", "HTTPDNS_PROXY_SHUTDOWN_GRACE": "1ms",
            "HTTPDNS_PROXY_VIA": "x", "HTTPDNS_PROXY_THREADS": "1",
            "HTTPDNS_PROXY_PROVIDER": "system", "HTTPDNS_PROXY_DOH_TIMESTAMP_UNIT": "milliseconds", "HTTPDNS_PROXY_DOH_METHOD": "post", "HTTPDNS_PROXY_TENCENT_MODE": "http", "HTTPDNS_PROXY_TENCENT_ALG": "des",
            "HTTPDNS_PROXY_STATIC_REFRESH": "1ms", "HTTPDNS_PROXY_RESOLVER_TIMEOUT": "1ms", "HTTPDNS_PROXY_IP_FAMILY": "both",
            "HTTPDNS_PROXY_MIN_TTL": "1ms", "HTTPDNS_PROXY_MAX_TTL": "2ms", "HTTPDNS_PROXY_NEGATIVE_TTL": "1ms",
            "HTTPDNS_PROXY_MAX_STALE": "0", "HTTPDNS_PROXY_CACHE_SIZE": "1", "HTTPDNS_PROXY_CACHE_IMMUTABLE": "yes", "HTTPDNS_PROXY_SYSTEM_FALLBACK": "no",
            "HTTPDNS_PROXY_ALLOW_CLIENT": "1.2.3.4", "HTTPDNS_PROXY_PROXY_AUTH_REALM": "x",
            "HTTPDNS_PROXY_MAX_CONNECTIONS": "5", "HTTPDNS_PROXY_MAX_CONNECTIONS_PER_CLIENT": "5",
            "HTTPDNS_PROXY_METRICS": "false", "HTTPDNS_PROXY_NETWORK_MONITOR": "false", "HTTPDNS_PROXY_ACCESS_LOG_FORMAT": "squid",
            "HTTPDNS_PROXY_ACCESS_LOG_REFERER": "yes",
            "HTTPDNS_PROXY_COMPARE_SYSTEM_DNS": "yes", "HTTPDNS_PROXY_COMPARE_RATE": "5",
            // (alibaba-encryption's default text "none" is a value, but reads as "no default" here.)
            "HTTPDNS_PROXY_ALIBABA_API": "v1", "HTTPDNS_PROXY_SCHEDULER_REFRESH": "1ms",
            "HTTPDNS_PROXY_TRANSPARENT_LISTEN": "127.0.0.1:2", "HTTPDNS_PROXY_TRANSPARENT_FALLBACK": "refuse",
            "HTTPDNS_PROXY_TRANSPARENT_PEEK_TIMEOUT": "1ms", "HTTPDNS_PROXY_TRANSPARENT_HELLO_TIMEOUT": "1ms",
            "HTTPDNS_PROXY_OUTBOUND_MARK": "1",
            "HTTPDNS_PROXY_DNS_LISTEN": "127.0.0.1:5353", "HTTPDNS_PROXY_DNS_UPSTREAM": "127.0.0.1:53", "HTTPDNS_PROXY_DNS_RATE_LIMIT": "5",
            "HTTPDNS_PROXY_DOH_LISTEN": "127.0.0.1:8053",
        ])
        for option in ConfigOption.all where option.defaultText != "none" {
            #expect(fieldText(config, option.name) != fieldText(.defaults, option.name), "\(option.name)")
            let items = option.isList ? option.defaultText.split(separator: ",").map(String.init) : [option.defaultText]
            try option.apply(&config, items)
        }
        config.allowDestinations = [] // documented as "none"
        #expect(config == .defaults)
    }

    @Test func bareCacheImmutableFlagMeansTrue() throws {
        #expect(try ServeOptions.parse(["--cache-immutable"]).givenValues == ["cache-immutable": ["true"]])
        #expect(try ServeOptions.parse(["--cache-immutable", "--listen", "127.0.0.1:1"]).givenValues
            == ["cache-immutable": ["true"], "listen": ["127.0.0.1:1"]])
        #expect(try ServeOptions.parse(["--cache-immutable", "false"]).givenValues == ["cache-immutable": ["false"]])
        #expect(try ServeOptions.parse(["--cache-immutable=no"]).givenValues == ["cache-immutable": ["no"]])
        #expect(try ConfigurationLoader.load(flags: ServeOptions.parse(["--cache-immutable"]), environment: [:]).cacheImmutable)
        #expect(try !ConfigurationLoader.load(flags: ServeOptions.parse(["--cache-immutable", "0"]), environment: [:]).cacheImmutable)
    }

    @Test(arguments: [("true", true), ("TRUE", true), ("yes", true), ("1", true), ("false", false), ("No", false), ("0", false)])
    func cacheImmutableAcceptsBooleanWords(text: String, expected: Bool) throws {
        #expect(try load(env: ["HTTPDNS_PROXY_CACHE_IMMUTABLE": text]).cacheImmutable == expected)
        // YAML 1.1 booleans arrive as text too.
        #expect(try load(flags: ["config": ["f"]], files: ["f": "cache-immutable: \(text)"]).cacheImmutable == expected)
    }

    @Test func repeatableResolverIPAndTLSUpgradeFlags() throws {
        let options = try ServeOptions.parse([
            "--resolver-ip", "192.0.2.1", "--resolver-ip", "2001:db8::1,192.0.2.2",
            "--tls-upgrade", "api.example.com", "--tls-upgrade", "*.example.org:8443",
        ])
        let config = try ConfigurationLoader.load(flags: options, environment: [:])
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

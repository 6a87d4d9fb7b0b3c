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
        #expect(names.count == 19)
        for name in names {
            #expect(name.allSatisfy { $0.isLowercase || $0 == "-" }, "\(name)")
        }
        #expect(ConfigOption.all.filter(\.isSecret).isEmpty)
        #expect(ConfigOption.all.filter(\.isRepeatable).map(\.name) == ["allow-destination"])
        #expect(Set(ConfigOption.all.filter(\.isList).map(\.name)) == ["allow-destination", "connect-ports"])
        #expect(ConfigOption.all.filter { !$0.isAllowedInFile }.map(\.name) == ["config"])
    }

    @Test func serveOptionsDeclaresExactlyTheRegistryFlags() throws {
        // Every registry option parses to itself through ServeOptions...
        for option in ConfigOption.all {
            let parsed = try ServeOptions.parse([option.flag, "v"])
            #expect(parsed.givenValues == [option.name: ["v"]], "\(option.flag)")
        }
        // ...and ServeOptions has no flag the registry lacks.
        let help = ServeOptions.helpMessage(columns: 500)
        let helpFlags = Set(help.split(whereSeparator: { !($0.isLetter || $0 == "-") })
            .filter { $0.hasPrefix("--") }.map(String.init))
        #expect(helpFlags == Set(ConfigOption.all.map(\.flag) + ["--help"]))
    }

    @Test func helpShowsRegistryTextDefaultAndEnvironment() {
        let help = ServeOptions.helpMessage(columns: 1000)
        for option in ConfigOption.all {
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
        #expect(d.provider == .system)
        #expect(d.connectPorts == [443])
        #expect(d.allowDestinations == [])
        #expect(d.logLevel == .info)
        #expect(d.logFormat == .json)
        #expect(d.accessLog == .stdout)
        #expect(d.connectTimeout == .seconds(10))
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
            "HTTPDNS_PROXY_CONNECT_TIMEOUT": "1ms", "HTTPDNS_PROXY_UPSTREAM_TIMEOUT": "1ms", "HTTPDNS_PROXY_HEADER_TIMEOUT": "1ms",
            "HTTPDNS_PROXY_CLIENT_IDLE_TIMEOUT": "1ms", "HTTPDNS_PROXY_TUNNEL_IDLE_TIMEOUT": "1ms",
            "HTTPDNS_PROXY_POOL_MAX_IDLE": "1", "HTTPDNS_PROXY_POOL_IDLE_TIMEOUT": "1ms", "HTTPDNS_PROXY_SHUTDOWN_GRACE": "1ms",
            "HTTPDNS_PROXY_VIA": "x", "HTTPDNS_PROXY_THREADS": "1",
        ])
        for option in ConfigOption.all where option.defaultText != "none" {
            #expect(fieldText(config, option.name) != fieldText(.defaults, option.name) || option.name == "provider", "\(option.name)")
            try option.apply(&config, [option.defaultText])
        }
        config.allowDestinations = [] // documented as "none"
        #expect(config == .defaults)
    }

    @Test func effectiveThreadsUsesCoresForZero() {
        var config = ProxyConfiguration.defaults
        #expect(config.effectiveThreads == System.coreCount)
        #expect(config.effectiveThreads >= 1)
        config.threads = 3
        #expect(config.effectiveThreads == 3)
    }

    @Test func providerAndEnumsRoundTrip() throws {
        #expect(try ProviderKind(parsing: "system") == .system)
        #expect(throws: ConfigurationError.malformedValue(reason: "provider 'doh' is not available in this build (supported: system)")) {
            try ProviderKind(parsing: "doh")
        }
        #expect(try AccessLogDestination(parsing: "/tmp/a.log") == .file(path: "/tmp/a.log"))
        #expect(LogLevel.trace < LogLevel.critical)
        #expect(LogLevel.allCases.map(\.rawValue) == ["trace", "debug", "info", "notice", "warning", "error", "critical"])
    }
}

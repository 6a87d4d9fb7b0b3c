import Testing
@testable import ProxyConfig

/// What `httpdns-proxy config check` and the serve start-up print.
@Suite struct ConfigCheckTests {
    @Test func aMisspeltVariableGetsTheSuggestionAFlagGets() {
        #expect(ConfigurationLoader.closestEnvironmentVariable(to: "HTTPDNS_PROXY_LISTN") == "HTTPDNS_PROXY_LISTEN")
        #expect(ConfigurationLoader.closestEnvironmentVariable(to: "HTTPDNS_PROXY_CONECT_TIMEOUT") == "HTTPDNS_PROXY_CONNECT_TIMEOUT")
        #expect(ConfigurationLoader.closestEnvironmentVariable(to: "HTTPDNS_PROXY_COLOUR") == nil)
        #expect(ConfigurationLoader.closestEnvironmentVariable(to: "HTTPDNS_PROXY_SPKI_PIN") == nil,
                "spki-pins can only be set in the file, so its variable is no suggestion")
        let warnings = ConfigurationLoader.environmentWarnings(in: [
            "HTTPDNS_PROXY_LISTN": "x", "HTTPDNS_PROXY_LISTEN": "y", "HTTPDNS_PROXY_COLOUR": "z", "PATH": "/bin",
        ])
        #expect(warnings == [
            "unknown environment variable HTTPDNS_PROXY_COLOUR is ignored",
            "unknown environment variable HTTPDNS_PROXY_LISTN is ignored (did you mean HTTPDNS_PROXY_LISTEN?)",
        ])
    }

    @Test func theReportNamesOptionsAsUsersSpellThemAndRedactsSecrets() throws {
        let configuration = try load(env: ["HTTPDNS_PROXY_SECRET": "hunter2-secret", "HTTPDNS_PROXY_LISTEN": "127.0.0.1:9999"])
        let report = configuration.checkReport
        #expect(report.contains("\nlisten: 127.0.0.1:9999  # env HTTPDNS_PROXY_LISTEN\n"), "\(report)")
        #expect(report.contains("\nsecret: <redacted>  # env HTTPDNS_PROXY_SECRET\n"), "\(report)")
        #expect(!report.contains("hunter2"))
        #expect(report.contains("\nresolver-ip: "))
        let labels = report.split(separator: "\n").map { String($0.prefix { $0 != ":" }) }
        #expect(labels.count == configuration.displayFields.count)
        let camel = labels.filter { $0.contains { $0.isUppercase } }
        #expect(camel.isEmpty, "field names instead of option names: \(camel)")
    }

    /// The values in force, never "nil": a provider's defaults, "off", "none", the core count.
    @Test func theReportShowsValuesInForce() throws {
        let alibaba = try load(flags: ["provider": ["alibaba"], "account-id": ["139450"]])
        let settings = Dictionary(alibaba.effectiveSettings.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(settings["resolver-url"]?.value == "https://resolvers.httpdns.aliyuncs.com")
        #expect(settings["resolver-ip"]?.value == ConfigOption.displayText(ProviderKind.alibaba.defaultResolverIPs))
        #expect(settings["resolver-ip"]?.value != "[]")
        #expect(settings["secret"]?.value == "none" && settings["ca-file"]?.value == "none")
        #expect(settings["threads"]?.value == "\(alibaba.effectiveThreads) (one per CPU core)")
        #expect(settings["pac-proxy"]?.value == "127.0.0.1:8080")
        #expect(settings["dns-upstream"]?.value == "resolv.conf")

        let json = try load(flags: ["admin-listen": ["off"], "listen": ["0.0.0.0:3128"], "fallback-provider": ["doh"], "threads": ["3"]])
        let values = Dictionary(json.effectiveSettings.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(values["resolver-url"] == ProviderKind.json.defaultResolverURL)
        #expect(values["admin-listen"] == "off" && values["threads"] == "3")
        #expect(values["pac-proxy"] == "the host /proxy.pac is requested with, port 3128")
        #expect(values["fallback-resolver-url"] == ProviderKind.doh.defaultResolverURL)
        for configuration in [alibaba, json, ProxyConfiguration.defaults] {
            let nils = configuration.effectiveSettings.filter { $0.value.contains("nil") }
            #expect(nils.isEmpty, "\(nils)")
        }
    }

    /// Each value names its source: the highest one given, or the default.
    @Test func eachSettingNamesItsSource() throws {
        let configuration = try load(
            flags: ["config": ["/etc/p.yaml"], "connect-timeout": ["3s"]],
            env: ["HTTPDNS_PROXY_HEADER_TIMEOUT": "9s", "HTTPDNS_PROXY_CONNECT_TIMEOUT": "4s"],
            files: ["/etc/p.yaml": "connect-timeout: 5s\nmax-connections: 7\n"])
        let settings = Dictionary(configuration.effectiveSettings.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(settings["connect-timeout"] == EffectiveSetting(name: "connect-timeout", value: "3s", source: .commandLine(flag: "--connect-timeout")))
        #expect(settings["header-timeout"] == EffectiveSetting(name: "header-timeout", value: "9s", source: .environment(variable: "HTTPDNS_PROXY_HEADER_TIMEOUT")))
        #expect(settings["max-connections"] == EffectiveSetting(name: "max-connections", value: "7", source: .configFile(path: "/etc/p.yaml", key: "max-connections")))
        #expect(settings["listen"] == EffectiveSetting(name: "listen", value: "127.0.0.1:8080", source: .defaults))
        #expect(settings["max-connections"]?.line == "max-connections: 7  # file /etc/p.yaml")
        #expect(settings["listen"]?.line == "listen: 127.0.0.1:8080  # default")
        #expect(settings["listen"]?.from == nil && settings["listen"]?.source == "default")
    }
}

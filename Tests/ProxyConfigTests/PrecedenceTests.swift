import Testing
@testable import ProxyConfig

/// Per option: a value for each source, and what each reads back as.
struct OptionSample: Sendable, CustomStringConvertible {
    let name: String
    let defaultValue: String
    let file: (yaml: String, expected: String)
    let env: (value: String, expected: String)
    let flag: (values: [String], expected: String)
    /// Environment variables every non-default load also needs (options that are only valid together).
    var requires: [String: String] = [:]
    var description: String { name }
}

private let s = 1_000_000_000
private let ms = 1_000_000

/// Sources get different values wherever the option has more than one valid
/// value, so a precedence mistake changes the result.
let optionSamples: [OptionSample] = [
    .init(name: "listen", defaultValue: "127.0.0.1:8080",
          file: ("127.0.0.1:9001", "127.0.0.1:9001"), env: ("127.0.0.1:9002", "127.0.0.1:9002"), flag: (["[::1]:9003"], "[::1]:9003")),
    .init(name: "admin-listen", defaultValue: "127.0.0.1:8081",
          file: ("off", "off"), env: ("127.0.0.1:9102", "127.0.0.1:9102"), flag: (["0.0.0.0:9103"], "0.0.0.0:9103")),
    .init(name: "pac-proxy", defaultValue: "none",
          file: ("proxy.example.com:3128", "proxy.example.com:3128"), env: ("192.0.2.1:8080", "192.0.2.1:8080"),
          flag: (["[2001:db8::1]:8080"], "[2001:db8::1]:8080")),
    .init(name: "pac-bypass", defaultValue: "",
          file: ("[Intranet.Example.COM, '*.corp.example.com']", "intranet.example.com,corp.example.com"),
          env: (".lan,10.0.0.0/8", "lan,10.0.0.0/8"), flag: (["fd00::/8", "a.example"], "fd00::/8,a.example")),
    .init(name: "provider", defaultValue: "json",
          file: ("doh", "doh"), env: ("system", "system"), flag: (["json"], "json")),
    .init(name: "resolver-url", defaultValue: "none",
          file: ("https://a.example/resolve", "https://a.example/resolve"), env: ("https://b.example/dns-query", "https://b.example/dns-query"),
          flag: (["http://[2001:db8::1]:8053/dns-query"], "http://[2001:db8::1]:8053/dns-query")),
    .init(name: "resolver-ip", defaultValue: "",
          file: ("[192.0.2.1, 192.0.2.2]", "192.0.2.1,192.0.2.2"), env: ("2001:db8::53", "2001:db8::53"),
          flag: (["192.0.2.9", "192.0.2.9"], "192.0.2.9")),
    .init(name: "account-id", defaultValue: "none",
          file: ("139450", "139450"), env: ("100000", "100000"), flag: (["abc-1"], "abc-1")),
    .init(name: "secret", defaultValue: "none",
          file: ("file-secret", "file-secret"), env: ("env-secret", "env-secret"), flag: (["flag-secret"], "flag-secret")),
    .init(name: "alibaba-api", defaultValue: "v2",
          file: ("v1", "v1"), env: ("v2", "v2"), flag: (["v1"], "v1")),
    .init(name: "alibaba-encryption", defaultValue: "none",
          file: ("gcm", "gcm"), env: ("cbc", "cbc"), flag: (["none"], "none")),
    .init(name: "aes-key", defaultValue: "none",
          file: ("000102030405060708090a0b0c0d0e0f", "000102030405060708090a0b0c0d0e0f"),
          env: ("101112131415161718191A1B1C1D1E1F", "101112131415161718191A1B1C1D1E1F"),
          flag: (["202122232425262728292a2b2c2d2e2f"], "202122232425262728292a2b2c2d2e2f")),
    .init(name: "scheduler-refresh", defaultValue: "\(3600 * s)",
          file: ("10m", "\(600 * s)"), env: ("0", "0"), flag: (["90s"], "\(90 * s)")),
    .init(name: "doh-uid", defaultValue: "none",
          file: ("'1001'", "1001"), env: ("1002", "1002"), flag: (["1003"], "1003"),
          requires: ["HTTPDNS_PROXY_DOH_ACCESS_KEY_ID": "ak", "HTTPDNS_PROXY_DOH_ACCESS_KEY_SECRET": "sk"]),
    .init(name: "doh-access-key-id", defaultValue: "none",
          file: ("ak-file", "ak-file"), env: ("ak-env", "ak-env"), flag: (["ak-flag"], "ak-flag"),
          requires: ["HTTPDNS_PROXY_DOH_UID": "1", "HTTPDNS_PROXY_DOH_ACCESS_KEY_SECRET": "sk"]),
    .init(name: "doh-access-key-secret", defaultValue: "none",
          file: ("sk-file", "sk-file"), env: ("sk-env", "sk-env"), flag: (["sk-flag"], "sk-flag"),
          requires: ["HTTPDNS_PROXY_DOH_UID": "1", "HTTPDNS_PROXY_DOH_ACCESS_KEY_ID": "ak"]),
    .init(name: "doh-timestamp-unit", defaultValue: "seconds",
          file: ("milliseconds", "milliseconds"), env: ("seconds", "seconds"), flag: (["milliseconds"], "milliseconds")),
    .init(name: "doh-method", defaultValue: "get",
          file: ("post", "post"), env: ("get", "get"), flag: (["post"], "post")),
    .init(name: "tencent-mode", defaultValue: "https",
          file: ("http", "http"), env: ("https", "https"), flag: (["http"], "http")),
    .init(name: "tencent-id", defaultValue: "none",
          file: ("'1001'", "1001"), env: ("1002", "1002"), flag: (["1003"], "1003")),
    .init(name: "tencent-token", defaultValue: "none",
          file: ("tok-file", "tok-file"), env: ("tok-env", "tok-env"), flag: (["tok-flag"], "tok-flag")),
    .init(name: "tencent-key", defaultValue: "none",
          file: ("key-file", "key-file"), env: ("key-env", "key-env"), flag: (["key-flag"], "key-flag")),
    .init(name: "tencent-alg", defaultValue: "aes",
          file: ("des", "des"), env: ("aes", "aes"), flag: (["des"], "des")),
    .init(name: "tencent-ecs-ip", defaultValue: "none",
          file: ("192.0.2.1", "192.0.2.1"), env: ("2001:db8::1", "2001:db8::1"), flag: (["198.51.100.7"], "198.51.100.7")),
    .init(name: "static-list", defaultValue: "none",
          file: ("/etc/httpdns-proxy/list.json", "/etc/httpdns-proxy/list.json"),
          env: ("https://lists.example.com/a.json", "https://lists.example.com/a.json"), flag: (["./list.json"], "./list.json")),
    .init(name: "static-refresh", defaultValue: "\(300 * s)",
          file: ("1m", "\(60 * s)"), env: ("2m", "\(120 * s)"), flag: (["90s"], "\(90 * s)")),
    .init(name: "resolver-timeout", defaultValue: "\(3 * s)",
          file: ("1s", "\(1 * s)"), env: ("500ms", "\(s / 2)"), flag: (["2.5s"], "\(2_500_000_000)")),
    .init(name: "resolver-ca-file", defaultValue: "none",
          file: ("/etc/ca/file.pem", "/etc/ca/file.pem"), env: ("/etc/ca/env.pem", "/etc/ca/env.pem"), flag: (["flag.pem"], "flag.pem")),
    .init(name: "ip-family", defaultValue: "auto",
          file: ("ipv4", "ipv4"), env: ("ipv6", "ipv6"), flag: (["both"], "both")),
    .init(name: "min-ttl", defaultValue: "0",
          file: ("10s", "\(10 * s)"), env: ("0", "0"), flag: (["1m"], "\(60 * s)")),
    .init(name: "max-ttl", defaultValue: "\(3600 * s)",
          file: ("10m", "\(600 * s)"), env: ("2h", "\(7200 * s)"), flag: (["1h"], "\(3600 * s)")),
    .init(name: "negative-ttl", defaultValue: "\(30 * s)",
          file: ("5s", "\(5 * s)"), env: ("10s", "\(10 * s)"), flag: (["1m"], "\(60 * s)")),
    .init(name: "max-stale", defaultValue: "\(3600 * s)",
          file: ("0", "0"), env: ("30m", "\(1800 * s)"), flag: (["2h"], "\(7200 * s)")),
    .init(name: "cache-size", defaultValue: "10000",
          file: ("1", "1"), env: ("500", "500"), flag: (["10000000"], "10000000")),
    .init(name: "system-dns-domain", defaultValue: "",
          file: ("[Cluster.Local, .svc]", "cluster.local,svc"), env: ("corp.example.com,internal", "corp.example.com,internal"),
          flag: ([".lan", "home.arpa."], "lan,home.arpa")),
    .init(name: "system-fallback", defaultValue: "true",
          file: ("false", "false"), env: ("yes", "true"), flag: (["0"], "false")),
    .init(name: "cache-immutable", defaultValue: "false",
          file: ("yes", "true"), env: ("false", "false"), flag: (["1"], "true")),
    .init(name: "cache-file", defaultValue: "none",
          file: ("/var/cache/a.json", "/var/cache/a.json"), env: ("/var/cache/b.json", "/var/cache/b.json"), flag: (["c.json"], "c.json")),
    .init(name: "keepalive-domains", defaultValue: "",
          file: ("[WWW.Example.COM, api.example.com.]", "www.example.com,api.example.com"), env: ("a.example", "a.example"),
          flag: (["b.example,c.example"], "b.example,c.example")),
    .init(name: "preload", defaultValue: "",
          file: ("'x.example, y.example, x.example'", "x.example,y.example"), env: ("Z.EXAMPLE", "z.example"),
          flag: (["w.example"], "w.example")),
    .init(name: "connect-ports", defaultValue: "443",
          file: ("[8443, 443, 8443]", "443,8443"), env: ("9443, 8443", "8443,9443"), flag: (["444"], "444")),
    .init(name: "allow-destination", defaultValue: "",
          file: ("[10.0.0.0/8, 172.16.0.0/12]", "10.0.0.0/8,172.16.0.0/12"), env: ("192.168.0.0/16,fd00::/8", "192.168.0.0/16,fd00::/8"),
          flag: (["127.0.0.0/8", "::1"], "127.0.0.0/8,::1/128")),
    .init(name: "ca-file", defaultValue: "none",
          file: ("/etc/ssl/file.pem", "/etc/ssl/file.pem"), env: ("/etc/ssl/env.pem", "/etc/ssl/env.pem"), flag: (["flag.pem"], "flag.pem")),
    // "*" starts a YAML alias, so a wildcard must be quoted in the file.
    .init(name: "tls-upgrade", defaultValue: "",
          file: ("[API.example.com, '*.example.org:8443']", "api.example.com,*.example.org:8443"),
          env: ("[2001:DB8::1]:8080", "[2001:db8::1]:8080"), flag: (["a.example", "b.example:81"], "a.example,b.example:81")),
    .init(name: "log-level", defaultValue: "info",
          file: ("debug", "debug"), env: ("warning", "warning"), flag: (["trace"], "trace")),
    .init(name: "log-format", defaultValue: "json",
          file: ("text", "text"), env: ("json", "json"), flag: (["text"], "text")),
    .init(name: "access-log", defaultValue: "stdout",
          file: ("off", "off"), env: ("./access.log", "./access.log"), flag: (["/var/log/a.log"], "/var/log/a.log")),
    .init(name: "connect-timeout", defaultValue: "\(10 * s)",
          file: ("1", "\(1 * s)"), env: ("2s", "\(2 * s)"), flag: (["3500ms"], "\(3_500_000_000)")),
    .init(name: "ip-backoff", defaultValue: "\(30 * s)",
          file: ("10s", "\(10 * s)"), env: ("20s", "\(20 * s)"), flag: (["40s"], "\(40 * s)")),
    .init(name: "ip-backoff-max", defaultValue: "\(300 * s)",
          file: ("1m", "\(60 * s)"), env: ("2m", "\(120 * s)"), flag: (["10m"], "\(600 * s)")),
    .init(name: "upstream-timeout", defaultValue: "\(60 * s)",
          file: ("1m", "\(60 * s)"), env: ("2m", "\(120 * s)"), flag: (["1h"], "\(3600 * s)")),
    .init(name: "header-timeout", defaultValue: "\(30 * s)",
          file: ("4s", "\(4 * s)"), env: ("5s", "\(5 * s)"), flag: (["6s"], "\(6 * s)")),
    .init(name: "client-idle-timeout", defaultValue: "\(60 * s)",
          file: ("7s", "\(7 * s)"), env: ("8s", "\(8 * s)"), flag: (["9s"], "\(9 * s)")),
    .init(name: "tunnel-idle-timeout", defaultValue: "\(300 * s)",
          file: ("10s", "\(10 * s)"), env: ("11s", "\(11 * s)"), flag: (["12s"], "\(12 * s)")),
    .init(name: "pool-max-idle", defaultValue: "64",
          file: ("0", "0"), env: ("5", "5"), flag: (["6"], "6")),
    .init(name: "pool-idle-timeout", defaultValue: "\(30 * s)",
          file: ("13s", "\(13 * s)"), env: ("14s", "\(14 * s)"), flag: (["15s"], "\(15 * s)")),
    .init(name: "shutdown-grace", defaultValue: "\(20 * s)",
          file: ("16s", "\(16 * s)"), env: ("17s", "\(17 * s)"), flag: (["0.5"], "\(s / 2)")),
    .init(name: "via", defaultValue: "httpdns-proxy",
          file: ("'from-file'", "from-file"), env: ("from-env", "from-env"), flag: (["from_flag.1"], "from_flag.1")),
    .init(name: "allow-client", defaultValue: ClientACL.defaultText,
          file: ("[10.1.0.0/16, 'fd00::/8']", "10.1.0.0/16,fd00::/8"), env: ("192.168.7.0/24", "192.168.7.0/24"),
          flag: (["127.0.0.2", "::1"], "127.0.0.2/32,::1/128")),
    .init(name: "proxy-auth", defaultValue: "",
          file: ("['alice:file pw', '@/etc/httpdns-proxy/users']", "alice:file pw,@/etc/httpdns-proxy/users"),
          env: ("bob:env:pw", "bob:env:pw"), flag: (["carol:flag", "dave:x"], "carol:flag,dave:x")),
    .init(name: "proxy-auth-realm", defaultValue: "httpdns-proxy",
          file: ("'file realm'", "file realm"), env: ("env-realm", "env-realm"), flag: (["flag realm"], "flag realm")),
    .init(name: "max-connections", defaultValue: "0",
          file: ("100", "100"), env: ("200", "200"), flag: (["300"], "300")),
    .init(name: "max-connections-per-client", defaultValue: "256",
          file: ("1", "1"), env: ("2", "2"), flag: (["3"], "3")),
    .init(name: "access-log-format", defaultValue: "json",
          file: ("combined", "combined"), env: ("squid", "squid"), flag: (["json"], "json")),
    .init(name: "access-log-referer", defaultValue: "false",
          file: ("yes", "true"), env: ("1", "true"), flag: (["false"], "false")),
    .init(name: "request-id-header", defaultValue: "none",
          file: ("X-Request-Id", "X-Request-Id"), env: ("X-Trace", "X-Trace"), flag: (["Request-ID"], "Request-ID")),
    .init(name: "metrics", defaultValue: "true",
          file: ("no", "false"), env: ("yes", "true"), flag: (["0"], "false")),
    .init(name: "network-monitor", defaultValue: "true",
          file: ("false", "false"), env: ("yes", "true"), flag: (["0"], "false")),
    .init(name: "threads", defaultValue: "0",
          file: ("1", "1"), env: ("2", "2"), flag: (["1024"], "1024")),
    .init(name: "compare-system-dns", defaultValue: "false",
          file: ("yes", "true"), env: ("1", "true"), flag: (["false"], "false")),
    .init(name: "compare-rate", defaultValue: "1.0",
          file: ("0.2", "0.2"), env: ("5", "5.0"), flag: (["100"], "100.0")),
    .init(name: "probe-domains", defaultValue: "",
          file: ("[API.example.com, 'b.example:8443']", "api.example.com,b.example:8443"), env: ("c.example:443", "c.example"),
          flag: (["d.example:80,e.example"], "d.example:80,e.example")),
    .init(name: "transparent-listen", defaultValue: "off",
          file: ("'127.0.0.1:15001'", "127.0.0.1:15001"), env: ("[::]:15001", "[::]:15001"), flag: (["0.0.0.0:15002"], "0.0.0.0:15002")),
    .init(name: "transparent-fallback", defaultValue: "original",
          file: ("refuse", "refuse"), env: ("original", "original"), flag: (["refuse"], "refuse")),
    .init(name: "transparent-peek-timeout", defaultValue: "\(300 * ms)",
          file: ("1s", "\(1000 * ms)"), env: ("50ms", "\(50 * ms)"), flag: (["2"], "\(2000 * ms)")),
    .init(name: "transparent-hello-timeout", defaultValue: "\(5000 * ms)",
          file: ("10s", "\(10000 * ms)"), env: ("2s", "\(2000 * ms)"), flag: (["1500ms"], "\(1500 * ms)")),
    .init(name: "outbound-mark", defaultValue: "off",
          file: ("0x10", "16"), env: ("7", "7"), flag: (["4294967295"], "4294967295")),
    .init(name: "dns-listen", defaultValue: "off",
          file: ("127.0.0.1:5353", "127.0.0.1:5353"), env: ("off", "off"), flag: (["[::1]:53"], "[::1]:53")),
    .init(name: "dns-forward-zone", defaultValue: "",
          file: ("[Cluster.Local, .svc]", "cluster.local,svc"), env: ("corp.example.com", "corp.example.com"), flag: (["lan", "home.arpa."], "lan,home.arpa")),
    .init(name: "dns-upstream", defaultValue: "",
          file: ("['10.96.0.10:53']", "10.96.0.10:53"), env: ("127.0.0.53:53,[::1]:5353", "127.0.0.53:53,[::1]:5353"), flag: (["192.0.2.53:53"], "192.0.2.53:53")),
    .init(name: "dns-rate-limit", defaultValue: "1000",
          file: ("0", "0"), env: ("50", "50"), flag: (["20000"], "20000")),
    .init(name: "doh-listen", defaultValue: "off",
          file: ("0.0.0.0:8053", "0.0.0.0:8053"), env: ("off", "off"), flag: (["127.0.0.1:0"], "127.0.0.1:0")),
    .init(name: "doh-token", defaultValue: "none",
          file: ("file-token", "file-token"), env: ("env-token", "env-token"), flag: (["flag-token"], "flag-token")),
    .init(name: "fallback-provider", defaultValue: "none",
          file: ("json", "json"), env: ("doh", "doh"), flag: (["alibaba"], "alibaba")),
    .init(name: "fallback-resolver-url", defaultValue: "none",
          file: ("https://a.example/resolve", "https://a.example/resolve"), env: ("http://127.0.0.1:8053/dns-query", "http://127.0.0.1:8053/dns-query"),
          flag: (["https://b.example/resolve"], "https://b.example/resolve")),
    .init(name: "fallback-resolver-ip", defaultValue: "",
          file: ("[192.0.2.1, 192.0.2.2]", "192.0.2.1,192.0.2.2"), env: ("2001:db8::53", "2001:db8::53"),
          flag: (["192.0.2.9"], "192.0.2.9")),
    .init(name: "resolver-token", defaultValue: "none",
          file: ("file-node-token", "file-node-token"), env: ("env-node-token", "env-node-token"), flag: (["flag-node-token"], "flag-node-token")),
]

@Suite struct PrecedenceTests {
    private static let path = "proxy.yaml"

    @Test func everyFileSettableOptionHasASample() {
        let sampled = Set(optionSamples.map(\.name))
        let options = Set(ConfigOption.all.filter { $0.isAllowedInFile && $0.isAllowedInFlagsAndEnvironment }.map(\.name))
        #expect(sampled == options)
    }

    @Test(arguments: optionSamples)
    func flagsBeatEnvironmentBeatFileBeatDefaults(sample: OptionSample) throws {
        let option = try #require(ConfigOption.named(sample.name))
        let files = [Self.path: "\(sample.name): \(sample.file.yaml)\n"]
        let configFlag = ["config": [Self.path]]
        let base = sample.requires
        let env = base.merging([option.environmentVariable: sample.env.value]) { $1 }
        let flags = configFlag.merging([sample.name: sample.flag.values]) { $1 }

        #expect(fieldText(try load(), sample.name) == sample.defaultValue)
        #expect(fieldText(try load(flags: configFlag, env: base, files: files), sample.name) == sample.file.expected)
        #expect(fieldText(try load(flags: configFlag, env: env, files: files), sample.name) == sample.env.expected)
        #expect(fieldText(try load(flags: flags, env: env, files: files), sample.name) == sample.flag.expected)
        #expect(fieldText(try load(flags: flags, env: base, files: files), sample.name) == sample.flag.expected)
        #expect(fieldText(try load(flags: [sample.name: sample.flag.values], env: env), sample.name) == sample.flag.expected)
        #expect(fieldText(try load(env: env), sample.name) == sample.env.expected)
    }

    @Test func precedenceIsPerKeyNotPerSource() throws {
        let files = [Self.path: """
            listen: 127.0.0.1:9001
            connect-timeout: 1s
            via: from-file
            """]
        let config = try load(
            flags: ["config": [Self.path], "listen": ["127.0.0.1:9003"]],
            env: ["HTTPDNS_PROXY_CONNECT_TIMEOUT": "2s"],
            files: files
        )
        #expect(config.listen == HostPort(host: "127.0.0.1", port: 9003))
        #expect(config.connectTimeout == .seconds(2))
        #expect(config.viaPseudonym == "from-file")
        #expect(config.headerTimeout == ProxyConfiguration.defaults.headerTimeout)
        #expect(config.configFile == Self.path)
    }

    @Test func configPathFromFlagBeatsEnvironment() throws {
        let files = ["flag.yaml": "via: flag-file", "env.yaml": "via: env-file"]
        #expect(try load(flags: ["config": ["flag.yaml"]], env: ["HTTPDNS_PROXY_CONFIG": "env.yaml"], files: files).viaPseudonym == "flag-file")
        #expect(try load(env: ["HTTPDNS_PROXY_CONFIG": "env.yaml"], files: files).viaPseudonym == "env-file")
        #expect(try load(env: ["HTTPDNS_PROXY_CONFIG": "env.yaml"], files: files).configFile == "env.yaml")
        #expect(try load().configFile == nil)
    }

    @Test func higherListReplacesLowerEntirely() throws {
        let files = [Self.path: "allow-destination: [10.0.0.0/8, 172.16.0.0/12]\nconnect-ports: [443, 8443]"]
        let fromFlag = try load(flags: ["config": [Self.path], "allow-destination": ["127.0.0.0/8"]], files: files)
        #expect(fromFlag.allowDestinations == [CIDR("127.0.0.0/8")!])
        #expect(fromFlag.connectPorts == [443, 8443])

        let fromEnv = try load(
            flags: ["config": [Self.path]],
            env: ["HTTPDNS_PROXY_ALLOW_DESTINATION": "192.168.0.0/16", "HTTPDNS_PROXY_CONNECT_PORTS": "9443"],
            files: files
        )
        #expect(fromEnv.allowDestinations == [CIDR("192.168.0.0/16")!])
        #expect(fromEnv.connectPorts == [9443])
    }

    @Test func emptyFileListClearsNothingButIsAccepted() throws {
        let config = try load(flags: ["config": [Self.path]], files: [Self.path: "allow-destination: []"])
        #expect(config.allowDestinations.isEmpty)
        let nullList = try load(flags: ["config": [Self.path]], files: [Self.path: "allow-destination:"])
        #expect(nullList.allowDestinations.isEmpty)
    }

    @Test func emptyEnvironmentVariableCountsAsUnset() throws {
        let files = [Self.path: "allow-destination: [10.0.0.0/8]\nlisten: 127.0.0.1:9001"]
        let config = try load(
            flags: ["config": [Self.path]],
            env: ["HTTPDNS_PROXY_ALLOW_DESTINATION": "", "HTTPDNS_PROXY_LISTEN": "  "],
            files: files
        )
        #expect(config.allowDestinations == [CIDR("10.0.0.0/8")!])
        #expect(config.listen == HostPort(host: "127.0.0.1", port: 9001))
    }

    @Test func listFormsInEverySource() throws {
        let flagValues = try load(flags: ["allow-destination": ["10.0.0.0/8,fd00::/8", "127.0.0.1"]])
        #expect(flagValues.allowDestinations.map(\.description) == ["10.0.0.0/8", "fd00::/8", "127.0.0.1/32"])
        let commaString = try load(flags: ["config": ["f"]], files: ["f": "connect-ports: '8443, 443'"])
        #expect(commaString.connectPorts == [443, 8443])
        let scalarNumber = try load(flags: ["config": ["f"]], files: ["f": "connect-ports: 8443"])
        #expect(scalarNumber.connectPorts == [8443])
    }

    @Test func repeatedSingleValueFlagUsesTheLast() throws {
        #expect(try load(flags: ["via": ["first", "second"]]).viaPseudonym == "second")
    }

    @Test func valuesAreTrimmed() throws {
        let config = try load(env: ["HTTPDNS_PROXY_CONNECT_TIMEOUT": " 3s\n", "HTTPDNS_PROXY_CONNECT_PORTS": " 443 , 8443 "])
        #expect(config.connectTimeout == .seconds(3))
        #expect(config.connectPorts == [443, 8443])
    }

    @Test func emptyAndCommentOnlyFilesAreFine() throws {
        for text in ["", "\n", "# nothing here\n", "---\n", "~"] {
            #expect(try load(flags: ["config": ["f"]], files: ["f": text]) == {
                var expected = ProxyConfiguration.defaults
                expected.configFile = "f"
                return expected
            }())
        }
    }

    @Test func quotedNumbersAndYAMLKeywordsAreTakenAsText() throws {
        // "off" is a boolean to YAML 1.1; it must still mean "off" here.
        let config = try load(flags: ["config": ["f"]], files: ["f": "admin-listen: off\npool-max-idle: '7'\nthreads: 3\nconnect-timeout: 1.5"])
        #expect(config.adminListen == nil)
        #expect(config.poolMaxIdle == 7)
        #expect(config.threads == 3)
        #expect(config.connectTimeout == .milliseconds(1500))
    }
}

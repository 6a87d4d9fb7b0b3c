import Testing
@testable import ProxyConfig

@Suite struct ConfigurationErrorTests {
    private let durationHint = "expected a duration like 500ms, 3s, 1.5s, 5m or 1h (a bare number means seconds)"

    @Test func environmentErrorNamesTheVariable() {
        let error = loadError(env: ["HTTPDNS_PROXY_CONNECT_TIMEOUT": "abc"])
        #expect(error?.description == "invalid value 'abc' for --connect-timeout (from environment variable HTTPDNS_PROXY_CONNECT_TIMEOUT): \(durationHint)")
    }

    @Test func fileErrorNamesFileAndKey() {
        let error = loadError(flags: ["config": ["proxy.yaml"]], files: ["proxy.yaml": "connect-timeout: abc"])
        #expect(error?.description == "invalid value 'abc' for --connect-timeout (from config file proxy.yaml, key connect-timeout): \(durationHint)")
    }

    @Test func flagErrorNamesTheFlag() {
        let error = loadError(flags: ["connect-timeout": ["0s"]])
        #expect(error?.description == "invalid value '0s' for --connect-timeout (from command-line flag --connect-timeout): duration must be greater than zero")
    }

    @Test func overriddenValuesAreStillValidated() {
        let error = loadError(flags: ["config": ["f"], "threads": ["2"]], files: ["f": "threads: 2000"])
        #expect(error == .invalidValue(option: "threads", value: "2000", source: .configFile(path: "f", key: "threads"),
                                       reason: "expected a whole number 0...1024"))
    }

    @Test(arguments: [
        ("listen", "localhost", "expected host:port like 127.0.0.1:8080, [::1]:8080 or localhost:8080 (missing ':port')"),
        ("admin-listen", "nope", "expected host:port like 127.0.0.1:8080, [::1]:8080 or localhost:8080 (missing ':port') (or 'off' to disable the admin endpoint)"),
        ("provider", "dnspod", "expected one of: system, alibaba, json, doh, static, tencent"),
        ("provider", "JSON", "expected one of: system, alibaba, json, doh, static, tencent"),
        ("resolver-url", "dns.alidns.com/resolve", "expected an http or https URL like https://dns.example.com/dns-query"),
        ("resolver-url", "ftp://dns.example.com/", "expected an http or https URL like https://dns.example.com/dns-query"),
        ("resolver-url", "https:///resolve", "expected an http or https URL like https://dns.example.com/dns-query (the host is missing)"),
        ("resolver-url", "https://user:pw@dns.example.com/", "expected an http or https URL like https://dns.example.com/dns-query (user names and passwords in the URL are not supported)"),
        ("resolver-url", "https://dns.example.com:0/", "expected an http or https URL like https://dns.example.com/dns-query (port '0' is not a number 1...65535)"),
        ("resolver-url", "https://2001:db8::1/dns-query", "expected an http or https URL like https://dns.example.com/dns-query (an IPv6 address must be in brackets, like https://[2001:db8::1]/dns-query)"),
        ("resolver-url", "https://bad_host!/", "expected an http or https URL like https://dns.example.com/dns-query ('bad_host!' is not a valid host name; expected a name like www.example.com)"),
        ("resolver-ip", "223.5.5.5,dns.alidns.com", "expected an IPv4 address like 192.0.2.1 (no leading zeros) or an IPv6 address like 2001:db8::1"),
        ("account-id", "12 34", "expected an id of letters, digits, '-', '_' or '.' (at most 128)"),
        ("account-id", "../x", "expected an id of letters, digits, '-', '_' or '.' (at most 128)"),
        ("doh-uid", "a/b", "expected an id of letters, digits, '-', '_' or '.' (at most 128)"),
        ("doh-timestamp-unit", "ms", "expected one of: seconds, milliseconds"),
        ("doh-method", "put", "expected one of: get, post"),
        ("static-list", "ftp://lists.example.com/a.json", "expected an http or https URL like https://dns.example.com/dns-query"),
        ("static-refresh", "0", "duration must be greater than zero"),
        ("resolver-timeout", "3 s", "expected a duration like 500ms, 3s, 1.5s, 5m or 1h (a bare number means seconds)"),
        ("ip-family", "ipv5", "expected one of: ipv4, ipv6, both, auto"),
        ("min-ttl", "-1s", "expected a duration like 500ms, 3s, 1.5s, 5m or 1h (a bare number means seconds)"),
        ("max-ttl", "0", "duration must be greater than zero"),
        ("negative-ttl", "0s", "duration must be greater than zero"),
        ("max-stale", "forever", "expected a duration like 500ms, 3s, 1.5s, 5m or 1h (a bare number means seconds)"),
        ("cache-size", "0", "expected a whole number 1...10000000"),
        ("cache-size", "10000001", "expected a whole number 1...10000000"),
        ("cache-immutable", "maybe", "expected true or false (also yes/no, 1/0)"),
        ("keepalive-domains", "www.example.com,,api.example.com", "'' is not a valid host name; expected a name like www.example.com"),
        ("keepalive-domains", "*.example.com", "'*.example.com' is a wildcard; expected a host name like www.example.com"),
        ("preload", "192.0.2.1", "'192.0.2.1' is an IP address; expected a host name like www.example.com"),
        ("preload", "bad..example.com", "'bad..example.com' is not a valid host name; expected a name like www.example.com"),
        ("preload", "-x.example.com", "'-x.example.com' is not a valid host name; expected a name like www.example.com"),
        ("tls-upgrade", "api.example.com:http", "expected HOST or HOST:PORT like api.example.com, *.example.com or api.example.com:8080 (port 'http' is not a number 1...65535)"),
        ("tls-upgrade", "*.*.example.com", "expected HOST or HOST:PORT like api.example.com, *.example.com or api.example.com:8080 ('*.*.example.com' is not a valid host name; expected a name like www.example.com (or a wildcard like *.example.com))"),
        ("tls-upgrade", "api.*.com", "expected HOST or HOST:PORT like api.example.com, *.example.com or api.example.com:8080 ('api.*.com' is not a valid host name; expected a name like www.example.com (or a wildcard like *.example.com))"),
        ("connect-ports", "443,abc", "'abc' is not a port number 1...65535 (expected a list like 443,8443)"),
        ("connect-ports", "0", "'0' is not a port number 1...65535 (expected a list like 443,8443)"),
        ("connect-ports", "443,,8443", "'' is not a port number 1...65535 (expected a list like 443,8443)"),
        ("allow-destination", "10.0.0.0/33", "prefix length '/33' must be a number 0...32 for IPv4"),
        ("allow-destination", "example.com", "expected a CIDR block like 10.0.0.0/8 or fd00::/8, or a single address; 'example.com' is not an IP address"),
        ("log-level", "verbose", "expected one of: trace, debug, info, notice, warning, error, critical"),
        ("log-format", "xml", "expected one of: json, text"),
        ("access-log", "stdot", "expected stdout, off, or a file path containing '/' like /var/log/httpdns-proxy/access.log or ./access.log"),
        ("pool-max-idle", "-1", "expected a whole number 0 or more"),
        ("threads", "1025", "expected a whole number 0...1024"),
        ("threads", "2.0", "expected a whole number 0...1024"),
        ("via", "my proxy", "expected an HTTP token (letters, digits and !#$%&'*+-.^_`|~; no spaces or commas)"),
        ("via", "a,b", "expected an HTTP token (letters, digits and !#$%&'*+-.^_`|~; no spaces or commas)"),
        ("shutdown-grace", "soon", "expected a duration like 500ms, 3s, 1.5s, 5m or 1h (a bare number means seconds)"),
    ])
    func eachOptionRejectsGarbageWithItsReason(option: String, value: String, reason: String) throws {
        let variable = try #require(ConfigOption.named(option)).environmentVariable
        let error = loadError(env: [variable: value])
        #expect(error == .invalidValue(option: option, value: value, source: .environment(variable: variable), reason: reason))
    }

    @Test func unknownKeySuggestsClosest() {
        let typo = loadError(flags: ["config": ["proxy.yaml"]], files: ["proxy.yaml": "listne: 127.0.0.1:1"])
        #expect(typo?.description == "unknown key 'listne' in config file proxy.yaml (did you mean 'listen'?)")
        let snake = loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "connect_timeout: 3s"])
        #expect(snake == .unknownKey(key: "connect_timeout", file: "p.yaml", suggestion: "connect-timeout"))
        let camel = loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "tunnelIdleTimeout: 3s"])
        #expect(camel == .unknownKey(key: "tunnelIdleTimeout", file: "p.yaml", suggestion: "tunnel-idle-timeout"))
        let unrelated = loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "colour: blue"])
        #expect(unrelated?.description == "unknown key 'colour' in config file p.yaml")
    }

    @Test func configKeyIsNotAllowedInTheFile() {
        let error = loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "config: other.yaml"])
        #expect(error == .keyNotAllowedInFile(key: "config", file: "p.yaml"))
        #expect(error?.description.contains("HTTPDNS_PROXY_CONFIG") == true)
    }

    @Test(arguments: ["- listen\n- via", "just a string", "42"])
    func nonMappingDocumentIsAnError(text: String) {
        let error = loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": text])
        #expect(error?.description == "invalid config file p.yaml: expected a mapping of option names to values, like 'listen: 127.0.0.1:8080'")
    }

    @Test func yamlSyntaxErrorGivesPositionWithoutContent() throws {
        let error = try #require(loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "via: ok\nlisten: [127.0.0.1:1\n"]))
        guard case .malformedFile(path: "p.yaml", let reason) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(reason.hasPrefix("not valid YAML: "))
        #expect(reason.contains("line "))
        #expect(!reason.contains("127.0.0.1"))
    }

    @Test func duplicateKeysAreAnError() throws {
        let error = try #require(loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "via: a\nvia: b\n"]))
        #expect(error.description.hasPrefix("invalid config file p.yaml: key 'via' appears more than once"))
    }

    @Test func wrongShapesInTheFile() {
        let files = ["p.yaml": "listen: [127.0.0.1:1, 127.0.0.1:2]"]
        #expect(loadError(flags: ["config": ["p.yaml"]], files: files) == .invalidValue(
            option: "listen", value: nil, source: .configFile(path: "p.yaml", key: "listen"), reason: "expected a single value, not a list"))
        let nested = ["p.yaml": "listen:\n  host: a\n"]
        #expect(loadError(flags: ["config": ["p.yaml"]], files: nested)?.description
            == "invalid value for --listen (from config file p.yaml, key listen): expected a value, found a mapping")
        let nestedList = ["p.yaml": "connect-ports: [[443]]"]
        #expect(loadError(flags: ["config": ["p.yaml"]], files: nestedList)?.description
            == "invalid value for --connect-ports (from config file p.yaml, key connect-ports): list items must be plain values, found a list")
        let empty = ["p.yaml": "listen:"]
        #expect(loadError(flags: ["config": ["p.yaml"]], files: empty)?.description
            == "invalid value for --listen (from config file p.yaml, key listen): the key has no value; remove the key to use the default (127.0.0.1:8080)")
        let listItem = ["p.yaml": "connect-ports: [443, x]"]
        #expect(loadError(flags: ["config": ["p.yaml"]], files: listItem)?.description
            == "invalid value '[443, x]' for --connect-ports (from config file p.yaml, key connect-ports): 'x' is not a port number 1...65535 (expected a list like 443,8443)")
    }

    @Test func unreadableFileNamesPathAndWhereThePathCameFrom() {
        let error = loadError(env: ["HTTPDNS_PROXY_CONFIG": "/etc/missing.yaml"])
        #expect(error?.description == "cannot read config file /etc/missing.yaml (from environment variable HTTPDNS_PROXY_CONFIG): No such file or directory")
        let fromFlag = loadError(flags: ["config": ["m.yaml"]])
        #expect(fromFlag == .unreadableFile(path: "m.yaml", source: .commandLine(flag: "--config"), reason: "No such file or directory"))
    }

    @Test func defaultReaderReportsErrno() {
        #expect(throws: (any Error).self) {
            try ConfigurationLoader.readFile("/nonexistent-httpdns-proxy-dir/x.yaml")
        }
        do {
            _ = try ConfigurationLoader.readFile("/nonexistent-httpdns-proxy-dir/x.yaml")
        } catch {
            #expect("\(error)" == "No such file or directory")
        }
    }

    @Test func unknownFlagNameIsAnError() {
        #expect(loadError(flags: ["lisen": ["x"]]) == .malformedValue(reason: "unknown option --lisen"))
    }

    @Test func sameAddressForBothListenersIsAConflict() throws {
        let error = try #require(loadError(flags: ["listen": ["127.0.0.1:9000"]], env: ["HTTPDNS_PROXY_ADMIN_LISTEN": "127.0.0.1:9000"]))
        #expect(error.description == "invalid configuration: --admin-listen and --listen are both 127.0.0.1:9000 "
            + "(admin-listen from environment variable HTTPDNS_PROXY_ADMIN_LISTEN, listen from command-line flag --listen); "
            + "use another port or set --admin-listen off")
        // Port 0 means two different ephemeral ports, which tests rely on.
        #expect(loadError(flags: ["listen": ["127.0.0.1:0"], "admin-listen": ["127.0.0.1:0"]]) == nil)
    }

    @Test func secretValuesNeverAppearInErrors() throws {
        let secret = ConfigOption(
            name: "secret", valueName: "text", help: "test only", defaultText: "none",
            expectation: "expected a 32-character key", isSecret: true
        ) { (_: inout ProxyConfiguration, items: [String]) throws(ConfigurationError) in
            throw .malformedValue(reason: "'\(items[0])' is too short")
        }
        let entry = ConfigurationLoader.RawEntry(items: ["hunter2"], display: "hunter2", source: .environment(variable: "HTTPDNS_PROXY_SECRET"))
        let error = ConfigurationLoader.contextualize(.malformedValue(reason: "'hunter2' is too short"), option: secret, entry: entry)
        #expect(error.description == "invalid value for --secret (from environment variable HTTPDNS_PROXY_SECRET): expected a 32-character key")
        #expect(!error.description.contains("hunter2"))

        // The same path for a non-secret option does show the value, so the test above can fail.
        let shown = ConfigurationLoader.contextualize(.malformedValue(reason: "bad"), option: .via, entry: entry)
        #expect(shown.description.contains("hunter2"))
    }

    @Test func fileOnlyOptionIsRejectedFromFlagsAndEnvironment() {
        let reason = "spki-pins can only be set in the config file (its value is a mapping)"
        #expect(loadError(env: ["HTTPDNS_PROXY_SPKI_PINS": "a.example=x"])
            == .invalidValue(option: "spki-pins", value: nil, source: .environment(variable: "HTTPDNS_PROXY_SPKI_PINS"), reason: reason))
        #expect(loadError(flags: ["spki-pins": ["x"]])
            == .invalidValue(option: "spki-pins", value: nil, source: .commandLine(flag: "--spki-pins"), reason: reason))
        #expect(throws: CommandLineError.fileOnly(.spkiPins)) { try flags(["--spki-pins", "x"]) }
    }

    @Test func unrecognizedEnvironmentVariablesAreReported() {
        let env = ["HTTPDNS_PROXY_LISTEN": "x", "HTTPDNS_PROXY_LISTN": "y", "HTTPDNS_PROXY_ZZZ": "", "PATH": "/bin"]
        #expect(ConfigurationLoader.unrecognizedEnvironmentVariables(in: env) == ["HTTPDNS_PROXY_LISTN", "HTTPDNS_PROXY_ZZZ"])
        // Ignored by the loader itself.
        #expect(loadError(env: ["HTTPDNS_PROXY_LISTN": "garbage"]) == nil)
    }
}

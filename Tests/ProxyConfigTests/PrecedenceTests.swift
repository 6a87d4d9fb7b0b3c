import Testing
@testable import ProxyConfig

/// Per option: a value for each source, and what each reads back as.
struct OptionSample: Sendable, CustomStringConvertible {
    let name: String
    let defaultValue: String
    let file: (yaml: String, expected: String)
    let env: (value: String, expected: String)
    let flag: (values: [String], expected: String)
    var description: String { name }
}

private let s = 1_000_000_000

/// Sources get different values wherever the option has more than one valid
/// value, so a precedence mistake changes the result.
let optionSamples: [OptionSample] = [
    .init(name: "listen", defaultValue: "127.0.0.1:8080",
          file: ("127.0.0.1:9001", "127.0.0.1:9001"), env: ("127.0.0.1:9002", "127.0.0.1:9002"), flag: (["[::1]:9003"], "[::1]:9003")),
    .init(name: "admin-listen", defaultValue: "127.0.0.1:8081",
          file: ("off", "off"), env: ("127.0.0.1:9102", "127.0.0.1:9102"), flag: (["0.0.0.0:9103"], "0.0.0.0:9103")),
    // Only one provider exists in this build, so its sources cannot differ.
    .init(name: "provider", defaultValue: "system",
          file: ("system", "system"), env: ("system", "system"), flag: (["system"], "system")),
    .init(name: "connect-ports", defaultValue: "443",
          file: ("[8443, 443, 8443]", "443,8443"), env: ("9443, 8443", "8443,9443"), flag: (["444"], "444")),
    .init(name: "allow-destination", defaultValue: "",
          file: ("[10.0.0.0/8, 172.16.0.0/12]", "10.0.0.0/8,172.16.0.0/12"), env: ("192.168.0.0/16,fd00::/8", "192.168.0.0/16,fd00::/8"),
          flag: (["127.0.0.0/8", "::1"], "127.0.0.0/8,::1/128")),
    .init(name: "log-level", defaultValue: "info",
          file: ("debug", "debug"), env: ("warning", "warning"), flag: (["trace"], "trace")),
    .init(name: "log-format", defaultValue: "json",
          file: ("text", "text"), env: ("json", "json"), flag: (["text"], "text")),
    .init(name: "access-log", defaultValue: "stdout",
          file: ("off", "off"), env: ("./access.log", "./access.log"), flag: (["/var/log/a.log"], "/var/log/a.log")),
    .init(name: "connect-timeout", defaultValue: "\(10 * s)",
          file: ("1", "\(1 * s)"), env: ("2s", "\(2 * s)"), flag: (["3500ms"], "\(3_500_000_000)")),
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
    .init(name: "threads", defaultValue: "0",
          file: ("1", "1"), env: ("2", "2"), flag: (["1024"], "1024")),
]

@Suite struct PrecedenceTests {
    private static let path = "proxy.yaml"

    @Test func everyFileSettableOptionHasASample() {
        let sampled = Set(optionSamples.map(\.name))
        let options = Set(ConfigOption.all.filter(\.isAllowedInFile).map(\.name))
        #expect(sampled == options)
    }

    @Test(arguments: optionSamples)
    func flagsBeatEnvironmentBeatFileBeatDefaults(sample: OptionSample) throws {
        let option = try #require(ConfigOption.named(sample.name))
        let files = [Self.path: "\(sample.name): \(sample.file.yaml)\n"]
        let configFlag = ["config": [Self.path]]
        let env = [option.environmentVariable: sample.env.value]
        let flags = configFlag.merging([sample.name: sample.flag.values]) { $1 }

        #expect(fieldText(try load(), sample.name) == sample.defaultValue)
        #expect(fieldText(try load(flags: configFlag, files: files), sample.name) == sample.file.expected)
        #expect(fieldText(try load(flags: configFlag, env: env, files: files), sample.name) == sample.env.expected)
        #expect(fieldText(try load(flags: flags, env: env, files: files), sample.name) == sample.flag.expected)
        #expect(fieldText(try load(flags: flags, files: files), sample.name) == sample.flag.expected)
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

import Testing
@testable import ProxyConfig

/// The options every source can set, the test's arguments: each is loaded with its entry's example
/// (`ConfigOption.example`) and default, so a new option is tested without a line here.
let sourcedOptions = ConfigOption.all.filter { $0.isAllowedInFile && $0.isAllowedInFlagsAndEnvironment }

extension ConfigOption: CustomTestStringConvertible {
    public var testDescription: String { name }
}

@Suite struct PrecedenceTests {
    private static let path = "proxy.yaml"

    @Test func everyExampleDiffersFromTheDefaultAndNamesRealOptions() throws {
        // (`config` names a file to read, and a mapping option's example is tested in the docs' example file.)
        for option in ConfigOption.all where option.isAllowedInFile && !option.isMapping {
            let needs = Dictionary(uniqueKeysWithValues: try option.exampleNeeds.map { name in
                let needed = try #require(ConfigOption.named(name), "\(option.name) needs \(name), no option")
                return (needed.environmentVariable, needed.example)
            })
            let config = try load(flags: [option.name: [option.example]], env: needs)
            #expect(valueText(config, option) != valueText(.defaults, option), "\(option.name)'s example is its default")
            if let excluded = option.exampleExcludes { #expect(ConfigOption.named(excluded) != nil, "\(excluded)") }
        }
    }

    /// The example E against the default D: each source set beats the ones below it, whichever
    /// value each holds. Where D is no value ("none"), each source alone must give E.
    @Test(arguments: sourcedOptions)
    func flagsBeatEnvironmentBeatFileBeatDefaults(option: ConfigOption) throws {
        // Options valid only together get their partners' examples from the environment.
        var base: [String: String] = [:]
        for name in option.exampleNeeds {
            let needed = try #require(ConfigOption.named(name))
            base[needed.environmentVariable] = needed.example
        }
        let example = option.example
        let file = { (value: String) in
            [Self.path: "\(option.name): \(value == example ? option.yamlExample : ConfigOption.yamlScalar(value, inFlow: false))\n"]
        }
        let configFlag = ["config": [Self.path]]
        func env(_ value: String) -> [String: String] { base.merging([option.environmentVariable: value]) { $1 } }
        func flags(_ value: String) -> [String: [String]] { configFlag.merging([option.name: [value]]) { $1 } }
        func text(_ config: ProxyConfiguration) -> String { valueText(config, option) }

        let defaultText = text(.defaults)
        let exampleText = text(try load(flags: [option.name: [example]], env: base))
        #expect(exampleText != defaultText)
        #expect(text(try load()) == defaultText)
        #expect(text(try load(flags: configFlag, env: base, files: file(example))) == exampleText)
        #expect(text(try load(env: env(example))) == exampleText)
        #expect(text(try load(flags: flags(example), env: base, files: file(example))) == exampleText)
        guard option.defaultText != "none" else { return }
        let other = option.defaultText
        #expect(text(try load(flags: configFlag, env: env(other), files: file(example))) == defaultText)
        #expect(text(try load(flags: flags(example), env: env(other), files: file(example))) == exampleText)
        #expect(text(try load(flags: configFlag, env: env(example), files: file(other))) == exampleText)
        #expect(text(try load(flags: flags(other), env: env(example), files: file(example))) == defaultText)
        #expect(text(try load(flags: [option.name: [other]], env: env(example))) == defaultText)
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

/// Builds a `ProxyConfiguration` from flags, environment and a YAML file.
///
/// There is one precedence rule, applied per option:
/// **flags > environment > config file > defaults**. A list option from a
/// higher source replaces the lower one entirely (lists are never merged), so
/// what you see in the highest source is what you get.
///
/// Every value given is validated, including one a higher source overrides.
///
/// The config file is named by `--config` or `HTTPDNS_PROXY_CONFIG` (the flag
/// wins); without either, no file is read. An environment variable set to the
/// empty string counts as unset, as container tooling often sets empty values.
public enum ConfigurationLoader {
    /// Loads from flag values keyed by option name without "--" (e.g.
    /// `["listen": ["127.0.0.1:0"], "allow-destination": ["10.0.0.0/8", "fd00::/8"]]`), as
    /// `CommandLineArguments(parsing:)` reads them from a command line. For single-valued options
    /// the last value wins, as on a command line.
    public static func load(
        flagValues: [String: [String]],
        environment: [String: String],
        readFile: (String) throws -> String = ConfigurationLoader.readFile
    ) throws(ConfigurationError) -> ProxyConfiguration {
        let fromFlags = try flagEntries(flagValues)
        let fromEnvironment = try environmentEntries(environment)

        var fromFile: [String: RawEntry] = [:]
        var configPath: String?
        if let pathEntry = fromFlags[ConfigOption.config.name] ?? fromEnvironment[ConfigOption.config.name] {
            let path = ConfigOption.single(pathEntry.items)
            configPath = path
            let text: String
            do {
                text = try readFile(path)
            } catch {
                throw .unreadableFile(path: path, source: pathEntry.source, reason: "\(error)")
            }
            fromFile = try fileEntries(yaml: text, path: path)
        }

        var config = ProxyConfiguration.defaults
        var sources: [String: ConfigurationSource] = [:]
        for option in ConfigOption.all {
            // Lowest source first, so the highest one given is applied last and wins. Every
            // given value is parsed, even an overridden one: a broken file should not stay
            // hidden until the flag that masked it is removed.
            for entry in [fromFile[option.name], fromEnvironment[option.name], fromFlags[option.name]].compactMap({ $0 }) {
                do {
                    if let applyMapping = option.applyMapping {
                        try applyMapping(&config, entry.mapping)
                    } else {
                        try option.apply(&config, entry.items)
                    }
                } catch {
                    throw contextualize(error, option: option, entry: entry)
                }
                sources[option.name] = entry.source
            }
        }
        config.configFile = configPath
        config.sources = ConfigurationSources(byOption: sources)

        try checkConflicts(config, sources: sources)
        return config
    }

    /// `HTTPDNS_PROXY_*` variables that name no option, sorted, so the caller
    /// can warn about typos (they are otherwise ignored, to stay compatible
    /// with environments prepared for newer versions).
    public static func unrecognizedEnvironmentVariables(in environment: [String: String]) -> [String] {
        let known = Set(ConfigOption.all.map(\.environmentVariable))
        return environment.keys
            .filter { $0.hasPrefix(ConfigOption.environmentPrefix) && !known.contains($0) }
            .sorted()
    }
}

// MARK: - Sources

extension ConfigurationLoader {
    /// One source's value for one option, before parsing.
    struct RawEntry {
        /// The items: exactly one for single-valued options.
        var items: [String]
        /// The value as the user wrote it, for error messages.
        var display: String
        var source: ConfigurationSource
        /// For mapping options (file only): the keys and their values; `items` is then empty.
        var mapping: [ConfigOption.MappingEntry] = []
    }

    static func flagEntries(_ flagValues: [String: [String]]) throws(ConfigurationError) -> [String: RawEntry] {
        var entries: [String: RawEntry] = [:]
        for (name, values) in flagValues where !values.isEmpty {
            guard let option = ConfigOption.named(name) else {
                throw .malformedValue(reason: "unknown option --\(name)")
            }
            let source = ConfigurationSource.commandLine(flag: option.flag)
            guard option.isAllowedInFlagsAndEnvironment else {
                throw .invalidValue(option: name, value: nil, source: source, reason: ConfigOption.fileOnlyReason(name))
            }
            let items = option.isList ? values.flatMap(splitList) : [values.last!.trimmed]
            entries[name] = RawEntry(items: items, display: values.joined(separator: ","), source: source)
        }
        return entries
    }

    static func environmentEntries(_ environment: [String: String]) throws(ConfigurationError) -> [String: RawEntry] {
        var entries: [String: RawEntry] = [:]
        for option in ConfigOption.all {
            let variable = option.environmentVariable
            guard let value = environment[variable], !value.trimmed.isEmpty else { continue }
            guard option.isAllowedInFlagsAndEnvironment else {
                throw .invalidValue(option: option.name, value: nil, source: .environment(variable: variable),
                                    reason: ConfigOption.fileOnlyReason(option.name))
            }
            let items = option.isList ? splitList(value) : [value.trimmed]
            entries[option.name] = RawEntry(items: items, display: value, source: .environment(variable: variable))
        }
        return entries
    }

    /// Comma-separated items, trimmed. Empty items are kept so the option's
    /// parser rejects "443,,8443" instead of silently reading it as two ports.
    static func splitList(_ text: String) -> [String] {
        text.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmed }
    }

    /// Adds option, value and source to a parser's complaint, hiding secrets.
    static func contextualize(_ error: ConfigurationError, option: ConfigOption, entry: RawEntry) -> ConfigurationError {
        guard case .malformedValue(let reason) = error else { return error }
        return .invalidValue(
            option: option.name,
            value: option.isSecret ? nil : entry.display,
            source: entry.source,
            reason: option.isSecret ? option.expectation : reason
        )
    }

    /// Checks between options that each parsed fine. Messages never contain
    /// the value of a secret option.
    static func checkConflicts(_ config: ProxyConfiguration, sources: [String: ConfigurationSource]) throws(ConfigurationError) {
        let origin = { (name: String) in sources[name].map(\.description) ?? "defaults" }
        // Two listeners on one fixed address would fail at bind time with a less helpful message.
        if let admin = config.adminListen, admin == config.listen, admin.port != 0 {
            throw .conflict(reason: "--admin-listen and --listen are both \(admin) "
                + "(admin-listen from \(origin(ConfigOption.adminListen.name)), listen from \(origin(ConfigOption.listen.name))); "
                + "use another port or set --admin-listen off")
        }
        if let transparent = config.transparentListen, transparent.port != 0,
           transparent == config.listen || transparent == config.adminListen {
            throw .conflict(reason: "--transparent-listen \(transparent) (from \(origin(ConfigOption.transparentListen.name))) is also "
                + "the address of --listen or --admin-listen; use another port")
        }
        // Every other pair (the DoH and DNS listeners too), and a wildcard address covering another.
        if let (first, second) = config.collidingListeners() {
            throw .conflict(reason: "--\(first.option.name) \(first.address) (from \(origin(first.option.name))) and "
                + "--\(second.option.name) \(second.address) (from \(origin(second.option.name))) cannot both listen: "
                + "the same port on the same or an overlapping address; use another port")
        }
        if config.transparentListen != nil, !config.proxyAuth.isEmpty {
            throw .conflict(reason: "--transparent-listen (from \(origin(ConfigOption.transparentListen.name))) and --proxy-auth "
                + "(from \(origin(ConfigOption.proxyAuth.name))) do not go together: a redirected app cannot send proxy credentials")
        }

        let providerText = "--provider \(config.provider.rawValue) (from \(origin(ConfigOption.provider.name)))"
        func setting(_ option: ConfigOption) -> String {
            "--\(option.name) (\(option.environmentVariable), or \(option.name) in the config file)"
        }
        switch config.provider {
        case .alibaba:
            guard config.accountID != nil else {
                throw .conflict(reason: "\(providerText) needs the Alibaba Cloud HTTPDNS account ID: set \(setting(.accountID))")
            }
            try checkAlibaba(config, origin: origin, setting: setting)
        case .tencent:
            try checkTencent(config.tencent, providerText: providerText, setting: setting)
        case .static:
            guard config.staticList != nil else {
                throw .conflict(reason: "\(providerText) needs the domain list: set \(setting(.staticList)) to an http(s) URL or a file path")
            }
        case .json, .doh:
            // The provider's default URL counts; this only fails if a default is ever removed.
            guard config.effectiveResolverURL != nil else {
                throw .conflict(reason: "\(providerText) needs a resolver URL: set \(setting(.resolverURL))")
            }
        case .system:
            break
        }

        if config.resolverToken != nil, ![.doh, .json].contains(config.provider) {
            throw .conflict(reason: "--resolver-token (from \(origin(ConfigOption.resolverToken.name))) is sent by the doh and json providers only; "
                + "\(providerText) has its own credentials")
        }

        if config.parentProxy == nil, let rule = config.routes.first(where: { $0.action == .parent }) {
            throw .conflict(reason: "--route \(rule) (from \(origin(ConfigOption.route.name))) sends connections to the parent proxy, "
                + "but none is set: set --parent-proxy http://host:port")
        }
        if config.tlsListen != nil, config.tlsCerts.isEmpty {
            throw .conflict(reason: "--tls-listen (from \(origin(ConfigOption.tlsListen.name))) needs a certificate: set --tls-cert (and --tls-key)")
        }
        if !config.tlsKeys.isEmpty, config.tlsKeys.count != config.tlsCerts.count {
            throw .conflict(reason: "--tls-key (from \(origin(ConfigOption.tlsKey.name))) names \(config.tlsKeys.count) key file(s) for "
                + "\(config.tlsCerts.count) --tls-cert file(s): give one key per certificate, in the same order, or none (each certificate file holds its key)")
        }

        if let signature = config.dohSignature {
            let parts: [(ConfigOption, String)] = [
                (.dohUID, signature.uid), (.dohAccessKeyID, signature.accessKeyID), (.dohAccessKeySecret, signature.accessKeySecret),
            ]
            let missing = parts.filter { $0.1.isEmpty }.map { "--\($0.0.name)" }
            if !missing.isEmpty {
                let given = parts.filter { !$0.1.isEmpty }.map { "--\($0.0.name) (from \(origin($0.0.name)))" }
                throw .conflict(reason: "the json request signature needs --doh-uid, --doh-access-key-id and --doh-access-key-secret together; "
                    + "\(given.joined(separator: " and ")) \(given.count == 1 ? "is" : "are") set but \(missing.joined(separator: " and ")) \(missing.count == 1 ? "is" : "are") not")
            }
        }

        if config.maxTTL < config.minTTL {
            throw .conflict(reason: "--max-ttl \(config.maxTTL.configDescription) (from \(origin(ConfigOption.maxTTL.name))) "
                + "is less than --min-ttl \(config.minTTL.configDescription) (from \(origin(ConfigOption.minTTL.name)))")
        }

        if config.ipBackoffMax < config.ipBackoff {
            throw .conflict(reason: "--ip-backoff-max \(config.ipBackoffMax.configDescription) (from \(origin(ConfigOption.ipBackoffMax.name))) "
                + "is less than --ip-backoff \(config.ipBackoff.configDescription) (from \(origin(ConfigOption.ipBackoff.name)))")
        }
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and newlines.
    public var trimmed: String {
        let isSpace = { (c: Character) in c == " " || c == "\t" || c == "\n" || c == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}

extension ConfigurationLoader {
    /// The Alibaba API version against the secret's form and the encryption settings. Messages
    /// name the options and their sources, never the secret or key values.
    static func checkAlibaba(
        _ config: ProxyConfiguration, origin: (String) -> String, setting: (ConfigOption) -> String
    ) throws(ConfigurationError) {
        let api = "--alibaba-api \(config.alibabaAPI.rawValue) (from \(origin(ConfigOption.alibabaAPI.name)))"
        switch config.alibabaAPI {
        case .v1:
            if config.alibabaEncryption != .none {
                throw .conflict(reason: "--alibaba-encryption \(config.alibabaEncryption.rawValue) (from \(origin(ConfigOption.alibabaEncryption.name))) "
                    + "needs --alibaba-api v2; \(api) has no encryption")
            }
        case .v2:
            if let secret = config.secret, !isHexKey(secret) {
                throw .conflict(reason: "\(api) signs with the hex-decoded secret key, but --secret (from \(origin(ConfigOption.secret.name))) "
                    + "is not hex (an even number of 0-9/a-f digits); use the account's hex secret key, or --alibaba-api v1")
            }
            if config.alibabaEncryption != .none, config.aesKey == nil {
                throw .conflict(reason: "--alibaba-encryption \(config.alibabaEncryption.rawValue) (from \(origin(ConfigOption.alibabaEncryption.name))) "
                    + "needs the account's AES key: set \(setting(.aesKey))")
            }
        }
    }

    static func isHexKey(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count % 2 == 0 && text.allSatisfy({ $0.isASCII && $0.isHexDigit })
    }
}

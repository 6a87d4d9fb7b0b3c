extension ConfigurationLoader {
    /// The admin address `healthcheck` probes, and where it came from.
    public struct AdminAddress: Sendable, Equatable {
        /// nil when the admin listener is off.
        public var listen: HostPort?
        public var source: ConfigurationSource
        /// Why the file could not tell (it could not be read, or it is not valid YAML and has no
        /// top-level `admin-listen:` line), when the default is used because of that.
        public var note: String?
    }

    /// `admin-listen` alone, with the usual precedence (flag > environment > file > default), for
    /// `healthcheck`: the probe asks the running proxy, so a file edited since the proxy started
    /// must not fail it. Only this key is read; everything else in the flags, the environment and
    /// the file is ignored, valid or not. A file that is not valid YAML is searched for a
    /// top-level `admin-listen:` line. Throws only when the value given for `admin-listen` itself
    /// is invalid (then no address is known).
    public static func adminAddress(
        flagValues: [String: [String]],
        environment: [String: String],
        readFile: (String) throws -> String = ConfigurationLoader.readFile
    ) throws(ConfigurationError) -> AdminAddress {
        let option = ConfigOption.adminListen
        let configOption = ConfigOption.config
        func parse(_ text: String, _ source: ConfigurationSource) throws(ConfigurationError) -> HostPort? {
            var config = ProxyConfiguration.defaults
            do {
                try option.apply(&config, [text.trimmed])
            } catch {
                throw contextualize(error, option: option, entry: RawEntry(items: [text], display: text, source: source))
            }
            return config.adminListen
        }
        if let text = flagValues[option.name]?.last {
            return AdminAddress(listen: try parse(text, .commandLine(flag: option.flag)), source: .commandLine(flag: option.flag))
        }
        if let text = environment[option.environmentVariable], !text.trimmed.isEmpty {
            let source = ConfigurationSource.environment(variable: option.environmentVariable)
            return AdminAddress(listen: try parse(text, source), source: source)
        }
        let path = flagValues[configOption.name]?.last ?? environment[configOption.environmentVariable].flatMap { $0.trimmed.isEmpty ? nil : $0 }
        var note: String?
        if let path = path?.trimmed {
            do {
                let source = ConfigurationSource.configFile(path: path, key: option.name)
                switch fileValue(of: option.name, in: try readFile(path)) {
                case .value(let text): return AdminAddress(listen: try parse(text, source), source: source)
                case .absent: break
                case .unknown(let reason): note = "config file \(path) \(reason)"
                }
            } catch let error as ConfigurationError {
                throw error
            } catch {
                note = "cannot read config file \(path): \(error)"
            }
        }
        return AdminAddress(listen: ProxyConfiguration.defaults.adminListen, source: .defaults, note: note)
    }

    enum FileValue: Equatable {
        case value(String)
        case absent
        case unknown(reason: String)
    }

    /// One top-level scalar key of a config file's text. Valid YAML is read as YAML (quotes,
    /// anchors); text that is not is searched line by line for `key:` at the start of a line.
    static func fileValue(of key: String, in text: String) -> FileValue {
        if let root = try? YAMLReader.compose(text) {
            guard case .mapping(let pairs, _) = root else { return .absent }
            for (keyNode, valueNode) in pairs {
                guard case .scalar(let keyScalar) = keyNode, keyScalar.string == key else { continue }
                guard case .scalar(let scalar) = valueNode, !valueNode.isNull else {
                    return .unknown(reason: "has no single value for \(key)")
                }
                return .value(scalar.string)
            }
            return .absent
        }
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) where line.hasPrefix(key + ":") {
            var value = String(line.dropFirst(key.count + 1))
            // A comment starts at " #" outside quotes; an address has neither '#' nor quotes inside.
            if let hash = value.indices.first(where: { $0 > value.startIndex && value[$0] == "#" && value[value.index(before: $0)] == " " }) {
                value = String(value[..<hash])
            }
            value = value.trimmed
            if value.count >= 2, let first = value.first, first == value.last, first == "'" || first == "\"" {
                value = String(value.dropFirst().dropLast())
            }
            return value.isEmpty ? .unknown(reason: "has no value for \(key)") : .value(value)
        }
        return .unknown(reason: "is not valid YAML and has no '\(key):' line")
    }
}

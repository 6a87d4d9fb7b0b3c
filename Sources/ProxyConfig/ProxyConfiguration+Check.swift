/// One option's value in force and where it came from, as `config check` (text and JSON) and the
/// admin `/summary` show it.
public struct EffectiveSetting: Sendable, Equatable, Encodable {
    /// The option as `--help` spells it.
    public var name: String
    /// The value in force (defaults worked out, secrets redacted): `ConfigOption.displayText(in:)`.
    public var value: String
    /// "default", "file", "env" or "flag".
    public var source: String
    /// The flag, environment variable or config file path; absent for a default.
    public var from: String?

    public init(name: String, value: String, source: ConfigurationSource) {
        self.name = name
        self.value = value
        self.source = source.kind
        self.from = source.location
    }

    /// "listen: 127.0.0.1:8080  # flag --listen": a YAML comment, so the line still reads as the
    /// config file key it is.
    public var line: String {
        "\(name): \(value)  # \(source)" + (from.map { " \($0)" } ?? "")
    }
}

extension ProxyConfiguration {
    /// Every option's value in force with its source, in `--help` order.
    public var effectiveSettings: [EffectiveSetting] {
        ConfigOption.all.map { option in
            EffectiveSetting(name: option.name, value: option.displayText(in: self), source: sources[option.name])
        }
    }

    /// The effective configuration as `httpdns-proxy config check` prints it: one line per option
    /// as `--help` spells it, secrets redacted, with where its value came from.
    public var checkReport: String {
        effectiveSettings.map(\.line).joined(separator: "\n")
    }
}

extension ConfigurationLoader {
    /// One line per unknown `HTTPDNS_PROXY_*` variable, with the closest option variable when one is
    /// near: what `serve` logs as a warning and `config check` prints.
    public static func environmentWarnings(in environment: [String: String]) -> [String] {
        unrecognizedEnvironmentVariables(in: environment).map { name in
            let hint = closestEnvironmentVariable(to: name).map { " (did you mean \($0)?)" } ?? ""
            return "unknown environment variable \(name) is ignored\(hint)"
        }
    }
}

/// Where a configuration value came from, for error messages.
public enum ConfigurationSource: Sendable, Hashable {
    case commandLine(flag: String)
    case environment(variable: String)
    case configFile(path: String, key: String)
    case defaults
}

extension ConfigurationSource: CustomStringConvertible {
    /// E.g. "environment variable HTTPDNS_PROXY_LISTEN" or "config file proxy.yaml, key listen".
    public var description: String {
        switch self {
        case .commandLine(let flag): "command-line flag \(flag)"
        case .environment(let variable): "environment variable \(variable)"
        case .configFile(let path, let key): "config file \(path), key \(key)"
        case .defaults: "defaults"
        }
    }
}

extension ConfigurationSource {
    /// "flag", "env", "file" or "default": where `config check` and `/summary` say a value came from.
    public var kind: String {
        switch self {
        case .commandLine: "flag"
        case .environment: "env"
        case .configFile: "file"
        case .defaults: "default"
        }
    }

    /// The flag, the environment variable or the file path; nil for a default.
    public var location: String? {
        switch self {
        case .commandLine(let flag): flag
        case .environment(let variable): variable
        case .configFile(let path, _): path
        case .defaults: nil
        }
    }
}

/// Where each option's value came from, by option name; an option not in it has its default.
/// Shown next to the values, not one of them: configurations with the same values are equal
/// whatever their sources (a reload that moves a value from a flag to the file changes nothing).
public struct ConfigurationSources: Sendable, Equatable {
    var byOption: [String: ConfigurationSource] = [:]

    public subscript(option: String) -> ConfigurationSource {
        byOption[option] ?? .defaults
    }

    public static func == (_: ConfigurationSources, _: ConfigurationSources) -> Bool { true }
}

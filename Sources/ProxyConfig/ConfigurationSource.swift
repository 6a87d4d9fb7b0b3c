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

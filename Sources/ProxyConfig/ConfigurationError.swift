/// Every error this module throws.
///
/// Messages name the option and the source of the bad value so an operator
/// can find it among flags, environment and file. Values of secret options are
/// never included (`value` is nil for them and the reason is the option's
/// generic expectation, not the parser's, which might quote the value).
public enum ConfigurationError: Error, Sendable, Hashable {
    /// A value did not parse for an option. `option` is the kebab-case name.
    case invalidValue(option: String, value: String?, source: ConfigurationSource, reason: String)
    /// A value parser's complaint, before the loader knows which option it was for.
    case malformedValue(reason: String)
    /// A config file key that is no option; `suggestion` is the closest known key.
    case unknownKey(key: String, file: String, suggestion: String?)
    /// A config file key naming an option that only flags and environment may set.
    case keyNotAllowedInFile(key: String, file: String)
    /// The config file could not be read at all.
    case unreadableFile(path: String, source: ConfigurationSource, reason: String)
    /// The config file is not YAML, or not a flat mapping of keys to values.
    case malformedFile(path: String, reason: String)
    /// Values that are each valid but cannot be used together.
    case conflict(reason: String)
}

extension ConfigurationError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .invalidValue(let option, let value, let source, let reason):
            let shown = value.map { " '\($0)'" } ?? ""
            return "invalid value\(shown) for --\(option) (from \(source)): \(reason)"
        case .malformedValue(let reason):
            return reason
        case .unknownKey(let key, let file, let suggestion):
            let hint = suggestion.map { " (did you mean '\($0)'?)" } ?? ""
            return "unknown key '\(key)' in config file \(file)\(hint)"
        case .keyNotAllowedInFile(let key, let file):
            return "key '\(key)' is not allowed in config file \(file): set it with --\(key) or \(ConfigOption.environmentVariable(for: key))"
        case .unreadableFile(let path, let source, let reason):
            return "cannot read config file \(path) (from \(source)): \(reason)"
        case .malformedFile(let path, let reason):
            return "invalid config file \(path): \(reason)"
        case .conflict(let reason):
            return "invalid configuration: \(reason)"
        }
    }
}

@testable import ProxyConfig

/// Raised by the fake file reader for paths the test did not provide.
struct MissingFile: Error, CustomStringConvertible {
    let description = "No such file or directory"
}

/// Loads with in-memory files so tests never touch the disk.
func load(
    flags: [String: [String]] = [:],
    env: [String: String] = [:],
    files: [String: String] = [:]
) throws(ConfigurationError) -> ProxyConfiguration {
    try ConfigurationLoader.load(flagValues: flags, environment: env) { path in
        guard let text = files[path] else { throw MissingFile() }
        return text
    }
}

/// The flag values the option table reads from a command line.
func flags(_ arguments: [String]) throws(CommandLineError) -> [String: [String]] {
    try CommandLineArguments(parsing: arguments).flagValues
}

/// The error `load` throws, or nil when it succeeds.
func loadError(
    flags: [String: [String]] = [:],
    env: [String: String] = [:],
    files: [String: String] = [:]
) -> ConfigurationError? {
    do {
        _ = try load(flags: flags, env: env, files: files)
        return nil
    } catch {
        return error
    }
}

/// An option's value in `config` as text, secrets included, read through the entry's own field,
/// so tests can compare any option's values without a printer per option.
func valueText(_ config: ProxyConfiguration, _ option: ConfigOption) -> String {
    guard let field = option.field else { return "?" }
    return field.text(config)
}

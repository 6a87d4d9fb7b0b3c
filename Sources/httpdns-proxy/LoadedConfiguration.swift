import ArgumentParser
import ProxyApp
import ProxyConfig
import ProxyUpstream

/// How the commands read a configuration. `serve`, `config check` and a reload use
/// `loadToServe`, one path, so a configuration the check calls valid is one the proxy starts (or
/// reloads) with; `resolve` needs no listener, htpasswd or access log and uses `load`.
enum LoadedConfiguration {
    /// Flags, environment, file and defaults, validated, plus what only this machine can tell
    /// about the provider (e.g. OpenSSL's legacy provider for DES).
    static func load(_ flags: CommandLineArguments, environment: [String: String]) throws -> ProxyConfiguration {
        let configuration = try values(flags, environment: environment)
        if let problem = ResolverStack.providerProblem(configuration) { throw ValidationError(problem) }
        return configuration
    }

    /// `load`, and the files the configuration names read as the proxy reads them (`StartupCheck`).
    static func loadToServe(_ flags: CommandLineArguments, environment: [String: String]) throws -> ProxyConfiguration {
        let configuration = try values(flags, environment: environment)
        if let problem = StartupCheck.problem(configuration) { throw ValidationError(problem) }
        return configuration
    }

    private static func values(_ flags: CommandLineArguments, environment: [String: String]) throws -> ProxyConfiguration {
        do {
            return try ConfigurationLoader.load(flagValues: flags.flagValues, environment: environment)
        } catch {
            throw ValidationError("\(error)")
        }
    }
}

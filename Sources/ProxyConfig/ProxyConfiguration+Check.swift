extension ProxyConfiguration {
    /// The effective configuration as `httpdns-proxy config check` prints it: one line per option
    /// as `--help` spells it, secrets redacted.
    public var checkReport: String {
        displayFields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
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

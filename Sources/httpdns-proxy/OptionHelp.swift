import ProxyConfig

/// Help text for options, from the registry: the grouped serve options `httpdns-proxy --help`
/// shows, and the short lists `help resolve` and `help healthcheck` show (each subcommand lists only
/// the options it reads).
enum OptionHelp {
    /// The serve options by what they are about; an option no group names lands in "Other", so
    /// a new option is never missing from the help.
    static let groups: [(title: String, options: [String])] = [
        ("Listening", ["config", "listen", "threads"]),
        ("Resolver", [
            "provider", "resolver-url", "resolver-ip", "resolver-token", "account-id", "secret", "alibaba-api", "alibaba-encryption", "aes-key",
            "scheduler-refresh", "doh-uid", "doh-access-key-id", "doh-access-key-secret", "doh-timestamp-unit", "doh-method",
            "tencent-mode", "tencent-id", "tencent-token", "tencent-key", "tencent-alg", "tencent-ecs-ip", "static-list",
            "static-refresh", "resolver-timeout", "resolver-ca-file", "ip-family", "system-fallback", "system-dns-domain",
            "min-ttl", "max-ttl", "negative-ttl", "max-stale", "cache-size", "cache-immutable", "cache-file",
            "keepalive-domains", "preload",
        ]),
        ("Upstream", [
            "connect-timeout", "ip-backoff", "ip-backoff-max", "upstream-timeout", "ca-file", "tls-upgrade", "spki-pins",
            "pool-max-idle", "pool-idle-timeout", "via", "probe-domains",
        ]),
        ("Access", ["connect-ports", "allow-destination", "allow-client", "proxy-auth", "proxy-auth-realm"]),
        ("Admin and observability", [
            "admin-listen", "pac-proxy", "pac-bypass", "metrics", "network-monitor", "compare-system-dns", "compare-rate",
        ]),
        ("Limits", ["max-connections", "max-connections-per-client", "header-timeout", "client-idle-timeout", "tunnel-idle-timeout", "shutdown-grace"]),
        ("Logging", ["log-level", "log-format", "access-log", "access-log-format", "request-id-header"]),
        ("Transparent interception", ["transparent-listen", "transparent-fallback", "transparent-peek-timeout", "outbound-mark"]),
        ("DNS and DoH listeners, resolver chain", [
            "dns-listen", "dns-forward-zone", "dns-upstream", "dns-rate-limit", "doh-listen", "doh-token", "fallback-provider",
            "fallback-resolver-url",
        ]),
    ]

    static let width = 78

    /// Every serve option (flags only: a mapping option is the file's) under its group's title.
    static var groupedServeOptions: String {
        let flagOptions = ConfigOption.all.filter { !$0.isMapping }
        var sections: [String] = []
        var listed: Set<String> = []
        for group in groups {
            let options = group.options.compactMap { name in flagOptions.first { $0.name == name } }
            listed.formUnion(options.map(\.name))
            if !options.isEmpty { sections.append(section(group.title, options)) }
        }
        let others = flagOptions.filter { !listed.contains($0.name) }
        if !others.isEmpty { sections.append(section("Other", others)) }
        return sections.joined(separator: "\n\n")
    }

    /// "TITLE:" and each option: its flag and value on one line, the help (with its default and
    /// variable) wrapped and indented below.
    static func section(_ title: String, _ options: [ConfigOption]) -> String {
        var lines = ["\(title.uppercased()):"]
        for option in options {
            lines.append("  --\(option.name) <\(option.valueName)>")
            let defaultNote = option.defaultText == "none" ? "" : " (default: \(option.defaultText))"
            lines += wrap("\(option.help)\(defaultNote) [env: \(option.environmentVariable)]", indent: 8)
        }
        return lines.joined(separator: "\n")
    }

    /// The options named, in that order, as one section.
    static func section(_ title: String, names: [String]) -> String {
        section(title, names.compactMap { ConfigOption.named($0) })
    }

    static func wrap(_ text: String, indent: Int) -> [String] {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, pad.count + line.count + 1 + word.count > width {
                lines.append(pad + line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(pad + line) }
        return lines
    }
}

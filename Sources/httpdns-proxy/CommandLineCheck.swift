import ProxyConfig

/// What ArgumentParser gets wrong for this command line, checked before it parses: `serve` is the
/// default subcommand, so a misspelt subcommand (`serv`) reached serve as a stray argument with no
/// hint, and `help foo` printed the top-level help and exited 0.
enum CommandLineCheck {
    static let subcommands = ["serve", "resolve", "healthcheck", "config", "transparent-rules", "nodelocal-rules"]

    /// The usage error for `arguments` (without the program name), or nil to let ArgumentParser parse.
    static func problem(in arguments: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        if first == "help" {
            guard arguments.count > 1, !arguments[1].hasPrefix("-") else { return nil }
            return subcommands.contains(arguments[1]) ? nil : unknown(arguments[1], footer: "httpdns-proxy --help")
        }
        if subcommands.contains(first) { return nil }
        // serve takes no positional argument, so a bare word first is always a subcommand name.
        return unknown(first, footer: "httpdns-proxy --help")
    }

    private static func unknown(_ word: String, footer: String) -> String {
        let hint = closest(to: word).map { " (did you mean '\($0)'?)" } ?? ""
        return "Error: unknown subcommand '\(word)'\(hint); the subcommands are \(subcommands.joined(separator: ", "))\n"
            + "See '\(footer)' for help.\n"
    }

    /// The subcommand within two edits (a third of the word for long ones) of `word`.
    static func closest(to word: String) -> String? {
        let scored = subcommands.map { ($0, ConfigurationLoader.editDistance(Array(word.lowercased()), Array($0))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, word.count / 3) else { return nil }
        return best.0
    }
}

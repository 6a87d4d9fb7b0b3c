import ProxyConfig

/// Help text for options, from the registry (each entry names its group): the grouped serve
/// options `httpdns-proxy --help` shows, and the short lists `help resolve` and `help healthcheck` show (each subcommand lists only
/// the options it reads).
enum OptionHelp {
    static let width = 78

    /// Every serve option (flags only: a mapping option is the file's) under its group's title,
    /// groups and options in the option table's order.
    static var groupedServeOptions: String {
        let flagOptions = ConfigOption.all.filter { !$0.isMapping }
        return ConfigOption.HelpGroup.allCases.compactMap { group in
            let options = flagOptions.filter { $0.group == group }
            return options.isEmpty ? nil : section(group.rawValue, options)
        }.joined(separator: "\n\n")
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

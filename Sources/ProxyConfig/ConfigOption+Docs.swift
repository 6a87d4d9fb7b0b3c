/// docs/configuration.md's options table and full example file, generated from the registry:
/// `httpdns-proxy config options-table` prints the table, scripts/options-table.sh splices both
/// into the docs between their markers, and DocumentationTests fails when the checked-in text differs.
extension ConfigOption {
    /// The line before the generated table in docs/configuration.md.
    public static let docsTableStart = "<!-- options table: generated from the option registry by scripts/options-table.sh; edit the registry, not this table -->"
    /// The line after it.
    public static let docsTableEnd = "<!-- end of options table -->"

    /// The Markdown table: flag, variable, file key, default, what a reload does, meaning.
    public static var markdownTable: String {
        var lines = [
            "| flag | environment variable | file key | default | reload | meaning |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for option in all {
            let flag = option.isAllowedInFlagsAndEnvironment ? "`\(option.flag)`" : "(file only)"
            let variable = option.isAllowedInFlagsAndEnvironment ? "`\(option.environmentVariable)`" : "(file only)"
            let key = option.fileKey.map { "`\($0)`" } ?? "(not allowed)"
            let defaultText = option.docDefault ?? (option.defaultText == "none" ? "none" : "`\(option.defaultText)`")
            lines.append("| \(flag) | \(variable) | \(key) | \(defaultText) | \(option.reload.docText) | \(option.doc) |")
        }
        return lines.joined(separator: "\n")
    }

    /// The line before the generated example file in docs/configuration.md.
    public static let docsExampleStart = "<!-- example file: generated from the option registry by scripts/options-table.sh; edit the registry's examples, not this file -->"
    /// The line after it.
    public static let docsExampleEnd = "<!-- end of example file -->"

    /// A YAML config file that sets every file key to its entry's example, grouped as `--help`
    /// groups options, each line commented with the default. An example that cannot go with an
    /// earlier one (`exampleExcludes`) is shown commented out, so the file loads as it is.
    public static var exampleFile: String {
        var lines = ["```yaml", "# /etc/httpdns-proxy/proxy.yaml"]
        for group in HelpGroup.allCases {
            let options = all.filter { $0.group == group && $0.isAllowedInFile }
            guard !options.isEmpty else { continue }
            lines += ["", "# \(group.rawValue)"]
            for option in options {
                let setting = "\(option.name): \(option.yamlExample)"
                var comment = "default: " + (option.docDefault ?? option.defaultText).replacingBackticks
                if let excluded = option.exampleExcludes { comment += "; not together with \(excluded)" }
                let line = (option.exampleExcludes == nil ? "" : "# ") + setting
                lines.append(line.padding(toAtLeast: 40) + " # " + comment)
            }
        }
        lines.append("```")
        return lines.joined(separator: "\n")
    }

    /// The example as a YAML value: a flow list for a list option, a scalar quoted when YAML
    /// would read it otherwise; a mapping option's example is YAML flow text already.
    var yamlExample: String {
        if isMapping { return example }
        if isList { return "[" + ConfigurationLoader.splitList(example).map { Self.yamlScalar($0, inFlow: true) }.joined(separator: ", ") + "]" }
        return Self.yamlScalar(example, inFlow: false)
    }

    /// `text` plain when YAML reads it back as the same text, else in single quotes.
    static func yamlScalar(_ text: String, inFlow: Bool) -> String {
        let startsPlain = text.first.map { $0.isLetter || $0.isNumber || $0 == "/" || $0 == "." } ?? false
        let plain = startsPlain && text.allSatisfy { $0.isLetter || $0.isNumber || "._/:+=-".contains($0) }
            && !(inFlow && text.contains(":"))
        return plain ? text : "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'"
    }

    /// `document` with the text between each pair of markers replaced by `markdownTable` and
    /// `exampleFile`; nil when a marker is missing.
    public static func splicingGenerated(into document: String) -> String? {
        splicing(exampleFile, between: docsExampleStart, and: docsExampleEnd,
                 into: splicing(markdownTable, between: docsTableStart, and: docsTableEnd, into: document))
    }

    private static func splicing(_ text: String, between startLine: String, and endLine: String, into document: String?) -> String? {
        guard let lines = document?.split(separator: "\n", omittingEmptySubsequences: false),
              let start = lines.firstIndex(where: { $0 == startLine }),
              let end = lines[start...].firstIndex(where: { $0 == endLine })
        else { return nil }
        let generated = text.split(separator: "\n", omittingEmptySubsequences: false)
        return (lines[...start] + generated + lines[end...]).joined(separator: "\n")
    }
}

extension String {
    fileprivate var replacingBackticks: String { filter { $0 != "`" } }

    fileprivate func padding(toAtLeast width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

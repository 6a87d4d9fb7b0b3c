/// docs/configuration.md's options table, generated from the registry: `httpdns-proxy config
/// options-table` prints it, scripts/options-table.sh splices it into the docs between the
/// markers, and DocumentationTests fails when the checked-in table differs.
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

    /// `document` with the text between the markers replaced by `markdownTable`; nil when the
    /// markers are missing.
    public static func splicingTable(into document: String) -> String? {
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0 == docsTableStart }),
              let end = lines[start...].firstIndex(where: { $0 == docsTableEnd })
        else { return nil }
        let table = markdownTable.split(separator: "\n", omittingEmptySubsequences: false)
        return (lines[...start] + table + lines[end...]).joined(separator: "\n")
    }
}

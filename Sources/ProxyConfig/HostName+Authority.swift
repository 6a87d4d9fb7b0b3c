extension HostName {
    /// Splits `HOST[:PORT]` (IPv6 in brackets) for the config parsers that accept an optional port.
    /// `example` opens every error message; `bracketHint` shows a bracketed IPv6 form in context.
    /// The host keeps its brackets (HostName.normalize takes them off); the port is 1...65535.
    static func splitAuthority(
        _ text: Substring,
        example: String,
        bracketHint: String
    ) throws(ConfigurationError) -> (host: Substring, port: Int?) {
        var hostText = text
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw .malformedValue(reason: "\(example) (missing ']' after the IPv6 address)")
            }
            hostText = text[...close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .malformedValue(reason: "\(example) (unexpected text after ']')") }
                portText = after.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":") {
            hostText = text[..<colon]
            guard !hostText.contains(":") else {
                throw .malformedValue(reason: "\(example) (an IPv6 address must be in brackets, like \(bracketHint))")
            }
            portText = text[text.index(after: colon)...]
        }
        guard let portText else { return (hostText, nil) }
        guard let port = try? ConfigOption.integer(String(portText), in: 1...65535) else {
            throw .malformedValue(reason: "\(example) (port '\(portText)' is not a number 1...65535)")
        }
        return (hostText, port)
    }
}

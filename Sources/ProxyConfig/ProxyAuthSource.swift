/// One `--proxy-auth` value: a user and password given directly (for tests and quick use), or
/// an htpasswd file whose lines are `user:hash`. The password never appears in descriptions.
public enum ProxyAuthSource: Sendable, Hashable, CustomStringConvertible {
    case credential(user: String, password: String)
    case htpasswdFile(path: String)

    /// Parses `USER:PASS` or `@FILE`. Error reasons never quote the value (it holds a password).
    public init(parsing text: String) throws(ConfigurationError) {
        if text.hasPrefix("@") {
            let path = String(text.dropFirst())
            guard !path.isEmpty, !path.contains(where: \.isNewline) else {
                throw .malformedValue(reason: "expected @FILE with an htpasswd file path after '@'")
            }
            self = .htpasswdFile(path: path)
            return
        }
        guard let colon = text.firstIndex(of: ":") else {
            throw .malformedValue(reason: "expected USER:PASS or @HTPASSWD_FILE (no ':' found)")
        }
        let user = String(text[..<colon])
        let password = String(text[text.index(after: colon)...])
        guard Self.isValidUser(user) else {
            throw .malformedValue(reason: "expected USER:PASS with a user name of printable characters (no ':', no spaces)")
        }
        guard !password.isEmpty, !password.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .malformedValue(reason: "expected USER:PASS with a non-empty password without control characters")
        }
        self = .credential(user: user, password: password)
    }

    /// A Basic user-id (RFC 7617 §2: no ':'); printable, no white space, at most 256 bytes.
    public static func isValidUser(_ user: String) -> Bool {
        !user.isEmpty && user.utf8.count <= 256
            && !user.unicodeScalars.contains { $0 == ":" || $0.properties.isWhitespace || $0.properties.generalCategory == .control }
    }

    public var description: String {
        switch self {
        case .credential(let user, _): "\(user):\(ProxyConfiguration.redacted)"
        case .htpasswdFile(let path): "@\(path)"
        }
    }
}

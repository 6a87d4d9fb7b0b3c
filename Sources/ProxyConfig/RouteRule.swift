/// A `route` rule: destinations (NO_PROXY syntax, `DestinationPattern`) and what the proxy does
/// with a connection to one of them. Rules are tried in order; the first whose pattern matches
/// decides; a destination no rule matches goes through the parent proxy when one is set, else
/// directly.
public struct RouteRule: Sendable, Hashable, CustomStringConvertible {
    public enum Action: String, Sendable, Hashable, CaseIterable {
        /// Dialed as usual: HTTPDNS, the destination policy, connect-by-IP.
        case direct
        /// Refused before anything is resolved or dialed: HTTP 403, SOCKS "not allowed".
        case deny
        /// Through `parent-proxy`.
        case parent
    }

    public var pattern: DestinationPattern
    public var action: Action

    public init(pattern: DestinationPattern, action: Action) {
        self.pattern = pattern
        self.action = action
    }

    /// `PATTERN=ACTION`, e.g. `*.ads.example=deny`, `api.corp.example=direct`, `10.0.0.0/8=deny`.
    public init(parsing text: String) throws(ConfigurationError) {
        guard let equals = text.lastIndex(of: "=") else {
            throw .malformedValue(reason: "'\(text)' has no action: write PATTERN=ACTION, e.g. *.ads.example=deny or api.corp.example=direct")
        }
        let actionText = text[text.index(after: equals)...].lowercased()
        guard let action = Action(rawValue: actionText) else {
            throw .malformedValue(
                reason: "'\(actionText)' is not an action in '\(text)': expected \(Action.allCases.map(\.rawValue).joined(separator: " or "))")
        }
        let patternText = String(text[..<equals])
        guard !patternText.isEmpty else { throw .malformedValue(reason: "'\(text)' has no destination before '='") }
        self.init(pattern: try DestinationPattern(parsing: patternText), action: action)
    }

    /// `PATTERN=ACTION` in canonical form.
    public var description: String { "\(pattern)=\(action.rawValue)" }
}

extension Array where Element == RouteRule {
    /// The first rule matching `host` (a name or IP literal as asked for), and its position
    /// (1-based, for messages); nil when none matches.
    public func firstMatch(host: String) -> (rule: RouteRule, position: Int)? {
        for (index, rule) in enumerated() where rule.pattern.matches(host: host) {
            return (rule, index + 1)
        }
        return nil
    }
}

extension ProxyConfiguration {
    /// The parent proxy a connection to `host` goes through (`route`, `parent-proxy`), or nil
    /// (direct, or denied).
    public func parentProxy(forHost host: String) -> ParentProxy? {
        guard let parentProxy else { return nil }
        guard let (rule, _) = routes.firstMatch(host: host) else { return parentProxy }
        return rule.action == .parent ? parentProxy : nil
    }
}

import NIOCore

/// What each registry entry carries besides its parser: the `--help` group, what a reload does
/// with it, the configuration field it sets (a key path), an example value and its row in
/// docs/configuration.md.
/// Help, the reload answer, the description (and so `config check` and the admin summary) and
/// the docs table are all derived from these; none of them lists options by hand.
extension ConfigOption {
    /// The `--help` sections, in order.
    public enum HelpGroup: String, CaseIterable, Sendable {
        case listening = "Listening"
        case resolver = "Resolver"
        case upstream = "Upstream"
        case access = "Access"
        case admin = "Admin and observability"
        case limits = "Limits"
        case logging = "Logging"
        case transparent = "Transparent interception"
        case dnsListeners = "DNS and DoH listeners, resolver chain"
    }

    /// What `POST /reload` (or SIGHUP) does with a changed value.
    public enum ReloadClass: String, Sendable {
        /// Needs a restart: the reload answer lists it under "needs a restart".
        case restart
        /// Applied to new requests and connections (the proxy server's part).
        case live
        /// Applied with the cache kept when the provider is an HTTPDNS service (alibaba, json, doh,
        /// tencent) before and after: a new provider is built.
        case resolverService
        /// Applied with the cache kept for every provider but `system`.
        case resolverCache
        /// The address families: like `resolverService`, and also for `static`.
        case resolverFamily

        /// The docs table's "reload" column.
        public var docText: String {
            switch self {
            case .restart: "restart"
            case .live: "live"
            case .resolverService: "live (HTTPDNS providers)"
            case .resolverCache: "live (not `system`)"
            case .resolverFamily: "live (not `system`)"
            }
        }
    }

    /// The configuration field (or part of one) an option sets, read through its key path.
    public struct Field: Sendable {
        /// The key path into `ProxyConfiguration`, e.g. `\.listen` or `\.tencent.token`.
        public let keyPath: PartialKeyPath<ProxyConfiguration> & Sendable
        /// The value as display text ("nil" when unset); secrets are redacted by `displayText(in:)`.
        let text: @Sendable (ProxyConfiguration) -> String
        /// Whether the value is unset (nil), so a redacted secret still shows whether it is set.
        let isNil: @Sendable (ProxyConfiguration) -> Bool
        /// Whether two configurations differ in this value (secrets compared by value).
        let differs: @Sendable (ProxyConfiguration, ProxyConfiguration) -> Bool
        /// The value's own description redacts the secret part (`proxy-auth` shows its users).
        let redactsItself: Bool
        /// The value in force when the field's own value means "work it out" (nil, 0, an empty
        /// list): e.g. the provider's default URL for an unset `resolver-url`; nil otherwise.
        let inForce: (@Sendable (ProxyConfiguration) -> String?)?
    }

    /// Attaches the table data to an entry: its help group, reload class and field, how the docs
    /// describe it (`doc`, Markdown) and, when the docs say more than `defaultText`, the docs' default.
    /// `example` (required, so no entry lacks one) is a valid non-default value; `needs` names
    /// options its example is valid only with, `excludes` one it cannot go with (see `example`).
    func table<Value: Equatable & Sendable>(
        _ group: HelpGroup, _ reload: ReloadClass, _ keyPath: KeyPath<ProxyConfiguration, Value> & Sendable,
        default docDefault: String? = nil, show: (@Sendable (Value) -> String)? = nil, redactsItself: Bool = false,
        inForce: (@Sendable (ProxyConfiguration) -> String?)? = nil,
        example: String, needs: [String] = [], excludes: String? = nil, doc: String
    ) -> ConfigOption {
        var option = self
        option.group = group
        option.reload = reload
        option.doc = doc
        option.docDefault = docDefault
        option.example = example
        option.exampleNeeds = needs
        option.exampleExcludes = excludes
        option.field = Field(
            keyPath: keyPath,
            text: { config in show.map { $0(config[keyPath: keyPath]) } ?? Self.displayText(config[keyPath: keyPath]) },
            isNil: { config in Self.isNil(config[keyPath: keyPath]) },
            differs: { $0[keyPath: keyPath] != $1[keyPath: keyPath] },
            redactsItself: redactsItself,
            inForce: inForce
        )
        return option
    }

    /// The option's value in force in `config` as `description`, `config check` and `/summary`
    /// show it: defaults worked out (the provider's resolver URL, the core count), an unset value
    /// as the option's default text ("none", "off"), never "nil"; secrets as
    /// `ProxyConfiguration.redacted` (or the default text when unset, so whether one is set stays
    /// visible); durations as they are written.
    public func displayText(in config: ProxyConfiguration) -> String {
        guard let field else { return "?" }
        let isUnset = field.isNil(config)
        if isSecret, !field.redactsItself { return isUnset ? defaultText : ProxyConfiguration.redacted }
        if let inForce = field.inForce?(config) { return inForce }
        return isUnset ? defaultText : field.text(config)
    }

    /// Whether `new` and `old` differ in this option's value.
    public func differs(_ new: ProxyConfiguration, _ old: ProxyConfiguration) -> Bool {
        field?.differs(new, old) ?? false
    }

    /// The names of the options whose values differ between `new` and `old`, in `--help` order.
    public static func changed(from old: ProxyConfiguration, to new: ProxyConfiguration) -> [String] {
        all.filter { $0.differs(new, old) }.map(\.name)
    }

    /// The options a reload applies for this class set, by name.
    public static func names(reloading classes: Set<ReloadClass>) -> Set<String> {
        Set(all.filter { classes.contains($0.reload) }.map(\.name))
    }

    static func isNil(_ value: Any) -> Bool {
        let mirror = Mirror(reflecting: value)
        return mirror.displayStyle == .optional && mirror.children.isEmpty
    }

    /// Display text for a field value: optionals unwrapped ("nil"), lists as "[a, b]", durations
    /// as config text, enums by their raw value, everything else by its description.
    static func displayText(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return "nil" }
            return displayText(wrapped)
        }
        if let duration = value as? TimeAmount { return duration.configDescription }
        if mirror.displayStyle == .collection, let items = value as? [Any] {
            return "[" + items.map(displayText).joined(separator: ", ") + "]"
        }
        if let described = value as? any CustomStringConvertible { return described.description }
        if let raw = value as? any RawRepresentable { return "\(raw.rawValue)" }
        return "\(value)"
    }
}

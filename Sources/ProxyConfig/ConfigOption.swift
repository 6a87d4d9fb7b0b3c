/// One configurable setting: its names in every source, its documentation and
/// how its text is turned into a `ProxyConfiguration` field.
///
/// The table of all options is `ConfigOption.all` (ConfigOption+Registry.swift). Each entry
/// also carries its help group, reload class, field key path and docs text (`table(...)`,
/// ConfigOption+Table.swift), from which help, the reload answer, the description and the
/// docs table are derived.
public struct ConfigOption: Sendable {
    /// Kebab-case name: the flag without "--" and the config-file key, e.g. "connect-timeout".
    public let name: String
    /// Placeholder shown in help, e.g. "duration".
    public let valueName: String
    /// One-line description for `--help` and the docs.
    public let help: String
    /// The default as text, e.g. "10s" (the loader never parses it; `ProxyConfiguration.defaults` is authoritative).
    public let defaultText: String
    /// What a valid value looks like, used in error messages for secret options,
    /// whose parser messages might quote the value.
    public let expectation: String
    /// The value is a list: comma-separated in flags and environment, a YAML
    /// list (or comma-separated string) in the file. A list from a higher
    /// source replaces a lower one entirely; lists are never merged.
    public let isList: Bool
    /// The flag may be given several times (each occurrence adds to the list).
    public let isRepeatable: Bool
    /// Whether the config file may set it (false for `config` itself).
    public let isAllowedInFile: Bool
    /// The value must never appear in messages or logs.
    public let isSecret: Bool
    /// The value is a YAML mapping from keys to lists of values (e.g. host to
    /// pins). Flags and environment variables have no syntax for that, so a
    /// mapping option can only be set in the config file.
    public let isMapping: Bool
    /// Parses the value's items (one for single-valued options) into the field.
    /// Throws `.malformedValue`; the loader adds option and source.
    let apply: @Sendable (inout ProxyConfiguration, [String]) throws(ConfigurationError) -> Void
    /// For mapping options: parses the entries into the field (`apply` is then unused).
    let applyMapping: (@Sendable (inout ProxyConfiguration, [MappingEntry]) throws(ConfigurationError) -> Void)?
    /// The `--help` section it is listed in.
    public internal(set) var group: HelpGroup = .listening
    /// What a reload does with a change of it.
    public internal(set) var reload: ReloadClass = .restart
    /// Its meaning as docs/configuration.md's table states it (Markdown).
    public internal(set) var doc: String = ""
    /// The docs table's default when it says more than `defaultText` (e.g. "per provider").
    public internal(set) var docDefault: String?
    /// The configuration field it sets; every entry has one (a test checks).
    public internal(set) var field: Field?

    /// One key of a mapping option's value with its values, in file order.
    struct MappingEntry: Sendable, Hashable {
        var key: String
        var values: [String]
    }

    init(
        name: String,
        valueName: String,
        help: String,
        defaultText: String,
        expectation: String,
        isList: Bool = false,
        isRepeatable: Bool = false,
        isAllowedInFile: Bool = true,
        isSecret: Bool = false,
        apply: @escaping @Sendable (inout ProxyConfiguration, [String]) throws(ConfigurationError) -> Void
    ) {
        self.name = name
        self.valueName = valueName
        self.help = help
        self.defaultText = defaultText
        self.expectation = expectation
        self.isList = isList
        self.isRepeatable = isRepeatable
        self.isAllowedInFile = isAllowedInFile
        self.isSecret = isSecret
        self.isMapping = false
        self.apply = apply
        self.applyMapping = nil
    }

    /// A mapping option (file only).
    init(
        name: String,
        valueName: String,
        help: String,
        defaultText: String,
        expectation: String,
        applyMapping: @escaping @Sendable (inout ProxyConfiguration, [MappingEntry]) throws(ConfigurationError) -> Void
    ) {
        self.name = name
        self.valueName = valueName
        self.help = help
        self.defaultText = defaultText
        self.expectation = expectation
        self.isList = false
        self.isRepeatable = false
        self.isAllowedInFile = true
        self.isSecret = false
        self.isMapping = true
        self.apply = { (_: inout ProxyConfiguration, _: [String]) throws(ConfigurationError) in
            throw .malformedValue(reason: ConfigOption.fileOnlyReason(name))
        }
        self.applyMapping = applyMapping
    }

    /// "--" + name. (For a mapping option this only names the option in messages; there is no such flag.)
    public var flag: String { "--" + name }

    /// Whether a command-line flag and an environment variable exist for it (false for mapping options).
    public var isAllowedInFlagsAndEnvironment: Bool { !isMapping }

    static func fileOnlyReason(_ name: String) -> String {
        "\(name) can only be set in the config file (its value is a mapping)"
    }

    /// "HTTPDNS_PROXY_" + upper snake case of the name, e.g. HTTPDNS_PROXY_CONNECT_TIMEOUT.
    public var environmentVariable: String { ConfigOption.environmentVariable(for: name) }

    /// The config-file key, or nil when the file may not set this option.
    public var fileKey: String? { isAllowedInFile ? name : nil }

    /// Prefix shared by all environment variables, so unknown ones can be spotted.
    public static let environmentPrefix = "HTTPDNS_PROXY_"

    static func environmentVariable(for name: String) -> String {
        environmentPrefix + String(name.uppercased().map { $0 == "-" ? "_" : $0 })
    }

    /// The option with this kebab-case name.
    public static func named(_ name: String) -> ConfigOption? {
        all.first { $0.name == name }
    }
}

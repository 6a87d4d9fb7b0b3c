/// One configurable setting: its names in every source, its default, its documentation, an
/// example value and how its text is turned into a `ProxyConfiguration` field.
///
/// The table of all options is `ConfigOption.all` (ConfigOption+Registry.swift). Each entry
/// also carries its help group, reload class, field key path, example and docs text
/// (`table(...)`, ConfigOption+Table.swift). Everything else is derived from the entries: the
/// command-line parser (ConfigOption+CommandLine.swift), `--help`, `ProxyConfiguration.defaults`,
/// the reload answer, the description, the docs' options table and example file, and the
/// precedence tests. Adding an option is its entry, its name in the registry and its field.
public struct ConfigOption: Sendable {
    /// Kebab-case name: the flag without "--" and the config-file key, e.g. "connect-timeout".
    public let name: String
    /// Placeholder shown in help, e.g. "duration".
    public let valueName: String
    /// One-line description for `--help` and the docs.
    public let help: String
    /// The default as text, e.g. "10s": the one place a default is stated. `ProxyConfiguration.defaults`
    /// is these texts parsed ("none" means the field's empty value: nil, an empty list).
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
    /// A boolean: its flag may stand alone (`--cache-immutable` means true) and takes a following
    /// word as its value only when that word is a boolean (`--cache-immutable false`).
    public let isBoolean: Bool
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
    /// A valid value other than the default, as written on the command line or in the environment
    /// (lists comma-separated; for a mapping option, YAML flow text). docs/configuration.md's
    /// example file is made of these, and the precedence tests load each through every source.
    public internal(set) var example: String = ""
    /// Options the example needs set too (to their own examples), e.g. the three parts of the
    /// DoH signature, which are valid only together.
    public internal(set) var exampleNeeds: [String] = []
    /// An option whose example cannot be set together with this one's (`transparent-listen` and
    /// `proxy-auth`): the docs' example file shows this line commented out.
    public internal(set) var exampleExcludes: String?

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
        isBoolean: Bool = false,
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
        self.isBoolean = isBoolean
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
        self.isBoolean = false
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

extension ProxyConfiguration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Shown instead of a secret value.
    public static let redacted = "<redacted>"

    /// Every option's value as display text, named as `--help` spells the option, in `--help`
    /// order, from the option table: secrets replaced by `redacted` (nil ones shown as "nil", so
    /// whether a secret is set stays visible). A test checks every stored property is some
    /// option's field, so nothing is left out and nothing is shown unredacted by a generic mirror.
    public var displayFields: [(name: String, value: String)] {
        ConfigOption.all.map { ($0.name, $0.displayText(in: self)) }
    }

    /// "ProxyConfiguration(listen: 127.0.0.1:8080, ..., secret: <redacted>, ...)".
    public var description: String {
        "ProxyConfiguration(" + displayFields.map { "\($0.name): \($0.value)" }.joined(separator: ", ") + ")"
    }

    public var debugDescription: String { description }

    /// The display text of each option, so `dump` and debuggers show no secrets either.
    public var customMirror: Mirror {
        Mirror(self, children: displayFields.map { (label: $0.name, value: $0.value as Any) }, displayStyle: .struct)
    }
}

extension ProxyConfiguration {
    /// The names of the options whose values differ from `other`'s, in `--help` order. Secrets
    /// are compared by value, not by their redacted text.
    public func differingOptions(from other: ProxyConfiguration) -> [String] {
        ConfigOption.changed(from: other, to: self)
    }
}

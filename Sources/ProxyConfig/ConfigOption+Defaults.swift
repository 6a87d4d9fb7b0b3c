import NIOCore

/// Defaults are stated once, as each entry's `defaultText` (what `--help` and the docs show), and
/// `ProxyConfiguration.defaults` is those texts parsed by the entries' own parsers. So a field
/// needs no default of its own: it starts as a `placeholder` that `defaults` overwrites.
extension ConfigOption {
    /// Sets this option's default in `config`: its default text parsed, or nothing for "none"
    /// (the field's empty value, nil or an empty list, is then the default) and for mapping options.
    func applyDefault(to config: inout ProxyConfiguration) {
        guard defaultText != "none", !isMapping else { return }
        let items = isList ? ConfigurationLoader.splitList(defaultText) : [defaultText]
        do {
            try apply(&config, items)
        } catch {
            preconditionFailure("the default of \(name), '\(defaultText)', does not parse: \(error)")
        }
    }
}

/// A field's value before `ProxyConfiguration.defaults` sets it: deliberately no default, so the
/// entry's `defaultText` is the only one. A field whose option defaults to "none" keeps it.
protocol OptionPlaceholder {
    static var placeholder: Self { get }
}

extension OptionPlaceholder where Self: CaseIterable {
    static var placeholder: Self { allCases.first! }
}

extension Bool: OptionPlaceholder { static var placeholder: Bool { false } }
extension Int: OptionPlaceholder { static var placeholder: Int { 0 } }
extension Double: OptionPlaceholder { static var placeholder: Double { 0 } }
extension String: OptionPlaceholder { static var placeholder: String { "" } }
extension TimeAmount: OptionPlaceholder { static var placeholder: TimeAmount { .zero } }
extension Array: OptionPlaceholder { static var placeholder: Array { [] } }
extension Dictionary: OptionPlaceholder { static var placeholder: Dictionary { [:] } }
extension HostPort: OptionPlaceholder { static var placeholder: HostPort { HostPort(host: "0.0.0.0", port: 0) } }
extension AccessLogDestination: OptionPlaceholder { static var placeholder: AccessLogDestination { .off } }
extension TencentSettings: OptionPlaceholder { static var placeholder: TencentSettings { TencentSettings() } }
extension SystemDNSDomains: OptionPlaceholder { static var placeholder: SystemDNSDomains { SystemDNSDomains() } }
extension DNSForwardZones: OptionPlaceholder { static var placeholder: DNSForwardZones { DNSForwardZones() } }
extension ProviderKind: OptionPlaceholder {}
extension AlibabaAPI: OptionPlaceholder {}
extension AlibabaEncryption: OptionPlaceholder {}
extension DoHTimestampUnit: OptionPlaceholder {}
extension DoHMethod: OptionPlaceholder {}
extension IPFamily: OptionPlaceholder {}
extension LogLevel: OptionPlaceholder {}
extension LogFormat: OptionPlaceholder {}
extension AccessLogFormat: OptionPlaceholder {}
extension TransparentFallback: OptionPlaceholder {}
extension ParentResolve: OptionPlaceholder {}
extension ParentDown: OptionPlaceholder {}

import ArgumentParser

/// The command-line flags for serving, one per `ConfigOption` (except mapping
/// options such as `spki-pins`, which only the config file can set).
///
/// Every flag is optional with no default: nil (or an empty list) means "not
/// given", so the loader can fall back to environment, file and defaults in
/// that order. Help text comes from the registry, with the default and the
/// environment variable appended so `--help` documents all three sources.
///
/// Use it as `@OptionGroup var options: ServeOptions` and pass it to
/// `ConfigurationLoader.load(flags:environment:)`. (ArgumentParser cannot declare options from
/// data, so each flag option has its `@Option` here; `givenValues` reads them all by reflection and
/// ConfigOptionTests checks they are exactly the registry's.)
public struct ServeOptions: ParsableArguments, Sendable {
    @Option(name: .customLong(ConfigOption.config.name), help: help(for: .config))
    public var config: String?

    @Option(name: .customLong(ConfigOption.listen.name), help: help(for: .listen))
    public var listen: String?

    @Option(name: .customLong(ConfigOption.adminListen.name), help: help(for: .adminListen))
    public var adminListen: String?

    @Option(name: .customLong(ConfigOption.pacProxy.name), help: help(for: .pacProxy))
    public var pacProxy: String?

    @Option(name: .customLong(ConfigOption.pacBypass.name), help: help(for: .pacBypass))
    public var pacBypass: [String] = []

    @Option(name: .customLong(ConfigOption.provider.name), help: help(for: .provider))
    public var provider: String?

    @Option(name: .customLong(ConfigOption.resolverURL.name), help: help(for: .resolverURL))
    public var resolverURL: String?

    @Option(name: .customLong(ConfigOption.resolverIP.name), help: help(for: .resolverIP))
    public var resolverIP: [String] = []

    @Option(name: .customLong(ConfigOption.accountID.name), help: help(for: .accountID))
    public var accountID: String?

    @Option(name: .customLong(ConfigOption.secret.name), help: help(for: .secret))
    public var secret: String?

    @Option(name: .customLong(ConfigOption.alibabaAPI.name), help: help(for: .alibabaAPI))
    public var alibabaAPI: String?

    @Option(name: .customLong(ConfigOption.alibabaEncryption.name), help: help(for: .alibabaEncryption))
    public var alibabaEncryption: String?

    @Option(name: .customLong(ConfigOption.aesKey.name), help: help(for: .aesKey))
    public var aesKey: String?

    @Option(name: .customLong(ConfigOption.schedulerRefresh.name), help: help(for: .schedulerRefresh))
    public var schedulerRefresh: String?

    @Option(name: .customLong(ConfigOption.dohUID.name), help: help(for: .dohUID))
    public var dohUID: String?

    @Option(name: .customLong(ConfigOption.dohAccessKeyID.name), help: help(for: .dohAccessKeyID))
    public var dohAccessKeyID: String?

    @Option(name: .customLong(ConfigOption.dohAccessKeySecret.name), help: help(for: .dohAccessKeySecret))
    public var dohAccessKeySecret: String?

    @Option(name: .customLong(ConfigOption.dohTimestampUnit.name), help: help(for: .dohTimestampUnit))
    public var dohTimestampUnit: String?

    @Option(name: .customLong(ConfigOption.dohMethod.name), help: help(for: .dohMethod))
    public var dohMethod: String?

    @Option(name: .customLong(ConfigOption.tencentMode.name), help: help(for: .tencentMode))
    public var tencentMode: String?

    @Option(name: .customLong(ConfigOption.tencentID.name), help: help(for: .tencentID))
    public var tencentID: String?

    @Option(name: .customLong(ConfigOption.tencentToken.name), help: help(for: .tencentToken))
    public var tencentToken: String?

    @Option(name: .customLong(ConfigOption.tencentKey.name), help: help(for: .tencentKey))
    public var tencentKey: String?

    @Option(name: .customLong(ConfigOption.tencentAlg.name), help: help(for: .tencentAlg))
    public var tencentAlg: String?

    @Option(name: .customLong(ConfigOption.tencentECSIP.name), help: help(for: .tencentECSIP))
    public var tencentECSIP: String?

    @Option(name: .customLong(ConfigOption.staticList.name), help: help(for: .staticList))
    public var staticList: String?

    @Option(name: .customLong(ConfigOption.staticRefresh.name), help: help(for: .staticRefresh))
    public var staticRefresh: String?

    @Option(name: .customLong(ConfigOption.resolverTimeout.name), help: help(for: .resolverTimeout))
    public var resolverTimeout: String?

    @Option(name: .customLong(ConfigOption.resolverCAFile.name), help: help(for: .resolverCAFile))
    public var resolverCAFile: String?

    @Option(name: .customLong(ConfigOption.ipFamily.name), help: help(for: .ipFamily))
    public var ipFamily: String?

    @Option(name: .customLong(ConfigOption.minTTL.name), help: help(for: .minTTL))
    public var minTTL: String?

    @Option(name: .customLong(ConfigOption.maxTTL.name), help: help(for: .maxTTL))
    public var maxTTL: String?

    @Option(name: .customLong(ConfigOption.negativeTTL.name), help: help(for: .negativeTTL))
    public var negativeTTL: String?

    @Option(name: .customLong(ConfigOption.maxStale.name), help: help(for: .maxStale))
    public var maxStale: String?

    @Option(name: .customLong(ConfigOption.systemFallback.name), help: help(for: .systemFallback))
    public var systemFallback: String?

    @Option(name: .customLong(ConfigOption.systemDNSDomain.name), help: help(for: .systemDNSDomain))
    public var systemDNSDomain: [String] = []

    @Option(name: .customLong(ConfigOption.dnsListen.name), help: help(for: .dnsListen))
    public var dnsListen: String?

    @Option(name: .customLong(ConfigOption.dnsForwardZone.name), help: help(for: .dnsForwardZone))
    public var dnsForwardZone: [String] = []

    @Option(name: .customLong(ConfigOption.dnsUpstream.name), help: help(for: .dnsUpstream))
    public var dnsUpstream: [String] = []

    @Option(name: .customLong(ConfigOption.dnsRateLimit.name), help: help(for: .dnsRateLimit))
    public var dnsRateLimit: String?

    @Option(name: .customLong(ConfigOption.dohListen.name), help: help(for: .dohListen))
    public var dohListen: String?

    @Option(name: .customLong(ConfigOption.dohToken.name), help: help(for: .dohToken))
    public var dohToken: String?

    @Option(name: .customLong(ConfigOption.fallbackProvider.name), help: help(for: .fallbackProvider))
    public var fallbackProvider: String?

    @Option(name: .customLong(ConfigOption.fallbackResolverURL.name), help: help(for: .fallbackResolverURL))
    public var fallbackResolverURL: String?

    @Option(name: .customLong(ConfigOption.fallbackResolverIP.name), help: help(for: .fallbackResolverIP))
    public var fallbackResolverIP: [String] = []

    @Option(name: .customLong(ConfigOption.resolverToken.name), help: help(for: .resolverToken))
    public var resolverToken: String?

    @Option(name: .customLong(ConfigOption.cacheSize.name), help: help(for: .cacheSize))
    public var cacheSize: String?

    /// `--cache-immutable` alone means true; `--cache-immutable false` (or `=false`) sets a value.
    @Option(
        name: .customLong(ConfigOption.cacheImmutable.name), defaultAsFlag: "true", parsing: .next,
        help: help(for: .cacheImmutable)
    )
    public var cacheImmutable: String? = nil

    @Option(name: .customLong(ConfigOption.cacheFile.name), help: help(for: .cacheFile))
    public var cacheFile: String?

    @Option(name: .customLong(ConfigOption.keepaliveDomains.name), help: help(for: .keepaliveDomains))
    public var keepaliveDomains: String?

    @Option(name: .customLong(ConfigOption.preload.name), help: help(for: .preload))
    public var preload: String?

    @Option(name: .customLong(ConfigOption.connectPorts.name), help: help(for: .connectPorts))
    public var connectPorts: String?

    @Option(name: .customLong(ConfigOption.allowDestination.name), help: help(for: .allowDestination))
    public var allowDestination: [String] = []

    @Option(name: .customLong(ConfigOption.allowClient.name), help: help(for: .allowClient))
    public var allowClient: [String] = []

    @Option(name: .customLong(ConfigOption.proxyAuth.name), help: help(for: .proxyAuth))
    public var proxyAuth: [String] = []

    @Option(name: .customLong(ConfigOption.proxyAuthRealm.name), help: help(for: .proxyAuthRealm))
    public var proxyAuthRealm: String?

    @Option(name: .customLong(ConfigOption.maxConnections.name), help: help(for: .maxConnections))
    public var maxConnections: String?

    @Option(name: .customLong(ConfigOption.maxConnectionsPerClient.name), help: help(for: .maxConnectionsPerClient))
    public var maxConnectionsPerClient: String?

    @Option(name: .customLong(ConfigOption.caFile.name), help: help(for: .caFile))
    public var caFile: String?

    @Option(name: .customLong(ConfigOption.tlsUpgrade.name), help: help(for: .tlsUpgrade))
    public var tlsUpgrade: [String] = []

    // spki-pins is a mapping and so has no flag (config file only).

    @Option(name: .customLong(ConfigOption.logLevel.name), help: help(for: .logLevel))
    public var logLevel: String?

    @Option(name: .customLong(ConfigOption.logFormat.name), help: help(for: .logFormat))
    public var logFormat: String?

    @Option(name: .customLong(ConfigOption.accessLog.name), help: help(for: .accessLog))
    public var accessLog: String?

    @Option(name: .customLong(ConfigOption.accessLogFormat.name), help: help(for: .accessLogFormat))
    public var accessLogFormat: String?

    @Option(name: .customLong(ConfigOption.requestIDHeader.name), help: help(for: .requestIDHeader))
    public var requestIDHeader: String?

    @Option(name: .customLong(ConfigOption.accessLogReferer.name), help: help(for: .accessLogReferer))
    public var accessLogReferer: String?

    @Option(name: .customLong(ConfigOption.metrics.name), help: help(for: .metrics))
    public var metrics: String?

    @Option(name: .customLong(ConfigOption.networkMonitor.name), help: help(for: .networkMonitor))
    public var networkMonitor: String?

    @Option(name: .customLong(ConfigOption.connectTimeout.name), help: help(for: .connectTimeout))
    public var connectTimeout: String?

    @Option(name: .customLong(ConfigOption.ipBackoff.name), help: help(for: .ipBackoff))
    public var ipBackoff: String?

    @Option(name: .customLong(ConfigOption.ipBackoffMax.name), help: help(for: .ipBackoffMax))
    public var ipBackoffMax: String?

    @Option(name: .customLong(ConfigOption.upstreamTimeout.name), help: help(for: .upstreamTimeout))
    public var upstreamTimeout: String?

    @Option(name: .customLong(ConfigOption.headerTimeout.name), help: help(for: .headerTimeout))
    public var headerTimeout: String?

    @Option(name: .customLong(ConfigOption.clientIdleTimeout.name), help: help(for: .clientIdleTimeout))
    public var clientIdleTimeout: String?

    @Option(name: .customLong(ConfigOption.tunnelIdleTimeout.name), help: help(for: .tunnelIdleTimeout))
    public var tunnelIdleTimeout: String?

    @Option(name: .customLong(ConfigOption.poolMaxIdle.name), help: help(for: .poolMaxIdle))
    public var poolMaxIdle: String?

    @Option(name: .customLong(ConfigOption.poolIdleTimeout.name), help: help(for: .poolIdleTimeout))
    public var poolIdleTimeout: String?

    @Option(name: .customLong(ConfigOption.shutdownGrace.name), help: help(for: .shutdownGrace))
    public var shutdownGrace: String?

    @Option(name: .customLong(ConfigOption.via.name), help: help(for: .via))
    public var via: String?

    @Option(name: .customLong(ConfigOption.threads.name), help: help(for: .threads))
    public var threads: String?

    /// `--compare-system-dns` alone means true.
    @Option(
        name: .customLong(ConfigOption.compareSystemDNS.name), defaultAsFlag: "true", parsing: .next,
        help: help(for: .compareSystemDNS)
    )
    public var compareSystemDNS: String? = nil

    @Option(name: .customLong(ConfigOption.compareRate.name), help: help(for: .compareRate))
    public var compareRate: String?

    @Option(name: .customLong(ConfigOption.probeDomains.name), help: help(for: .probeDomains))
    public var probeDomains: String?

    @Option(name: .customLong(ConfigOption.transparentListen.name), help: help(for: .transparentListen))
    public var transparentListen: String?

    @Option(name: .customLong(ConfigOption.transparentFallback.name), help: help(for: .transparentFallback))
    public var transparentFallback: String?

    @Option(name: .customLong(ConfigOption.transparentPeekTimeout.name), help: help(for: .transparentPeekTimeout))
    public var transparentPeekTimeout: String?

    @Option(name: .customLong(ConfigOption.transparentHelloTimeout.name), help: help(for: .transparentHelloTimeout))
    public var transparentHelloTimeout: String?

    @Option(name: .customLong(ConfigOption.outboundMark.name), help: help(for: .outboundMark))
    public var outboundMark: String?

    public init() {}

    /// The flags that were given, keyed by option name; repeated flags keep every value in order.
    /// Read off the properties above (each `@Option` property is its option's name in camel case),
    /// so a new option needs its `@Option` here and nothing else in this file.
    public var givenValues: [String: [String]] {
        var values: [String: [String]] = [:]
        for child in Mirror(reflecting: self).children {
            guard let label = child.label, let flag = child.value as? any GivenFlag else { continue }
            let items = flag.givenItems
            guard !items.isEmpty else { continue }
            guard let name = Self.optionNames[Self.matchKey(label)] else {
                preconditionFailure("ServeOptions.\(label) is no registered option")
            }
            values[name] = items
        }
        return values
    }

    /// Option names by their letters and digits only: "resolverip" for `_resolverIP` and "resolver-ip".
    private static let optionNames = Dictionary(uniqueKeysWithValues: ConfigOption.all.map { (matchKey($0.name), $0.name) })

    private static func matchKey(_ text: String) -> String {
        String(text.lowercased().filter { $0.isLetter || $0.isNumber })
    }

    private static func help(for option: ConfigOption) -> ArgumentHelp {
        let defaultNote = option.defaultText == "none" ? "" : " (default: \(option.defaultText))"
        return ArgumentHelp(
            "\(option.help)\(defaultNote) [env: \(option.environmentVariable)]",
            valueName: option.valueName
        )
    }
}

/// An `@Option` property's value as command-line items: none, one, or one per repetition.
private protocol GivenFlag {
    var givenItems: [String] { get }
}

private protocol FlagItems {
    var flagItems: [String] { get }
}

extension Option: GivenFlag where Value: FlagItems {
    fileprivate var givenItems: [String] { wrappedValue.flagItems }
}

extension Optional: FlagItems where Wrapped == String {
    fileprivate var flagItems: [String] { map { [$0] } ?? [] }
}

extension Array: FlagItems where Element == String {
    fileprivate var flagItems: [String] { self }
}

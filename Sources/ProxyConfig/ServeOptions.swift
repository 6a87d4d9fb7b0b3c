import ArgumentParser

/// The command-line flags for serving, one per `ConfigOption`.
///
/// Every flag is optional with no default: nil (or an empty list) means "not
/// given", so the loader can fall back to environment, file and defaults in
/// that order. Help text comes from the registry, with the default and the
/// environment variable appended so `--help` documents all three sources.
///
/// Use it as `@OptionGroup var options: ServeOptions` and pass it to
/// `ConfigurationLoader.load(flags:environment:)`.
public struct ServeOptions: ParsableArguments, Sendable {
    @Option(name: .customLong(ConfigOption.config.name), help: help(for: .config))
    public var config: String?

    @Option(name: .customLong(ConfigOption.listen.name), help: help(for: .listen))
    public var listen: String?

    @Option(name: .customLong(ConfigOption.adminListen.name), help: help(for: .adminListen))
    public var adminListen: String?

    @Option(name: .customLong(ConfigOption.provider.name), help: help(for: .provider))
    public var provider: String?

    @Option(name: .customLong(ConfigOption.connectPorts.name), help: help(for: .connectPorts))
    public var connectPorts: String?

    @Option(name: .customLong(ConfigOption.allowDestination.name), help: help(for: .allowDestination))
    public var allowDestination: [String] = []

    @Option(name: .customLong(ConfigOption.logLevel.name), help: help(for: .logLevel))
    public var logLevel: String?

    @Option(name: .customLong(ConfigOption.logFormat.name), help: help(for: .logFormat))
    public var logFormat: String?

    @Option(name: .customLong(ConfigOption.accessLog.name), help: help(for: .accessLog))
    public var accessLog: String?

    @Option(name: .customLong(ConfigOption.connectTimeout.name), help: help(for: .connectTimeout))
    public var connectTimeout: String?

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

    public init() {}

    /// The flags that were given, keyed by option name; repeated flags keep every value in order.
    public var givenValues: [String: [String]] {
        var values: [String: [String]] = [:]
        func put(_ option: ConfigOption, _ value: String?) {
            if let value { values[option.name] = [value] }
        }
        put(.config, config)
        put(.listen, listen)
        put(.adminListen, adminListen)
        put(.provider, provider)
        put(.connectPorts, connectPorts)
        if !allowDestination.isEmpty { values[ConfigOption.allowDestination.name] = allowDestination }
        put(.logLevel, logLevel)
        put(.logFormat, logFormat)
        put(.accessLog, accessLog)
        put(.connectTimeout, connectTimeout)
        put(.upstreamTimeout, upstreamTimeout)
        put(.headerTimeout, headerTimeout)
        put(.clientIdleTimeout, clientIdleTimeout)
        put(.tunnelIdleTimeout, tunnelIdleTimeout)
        put(.poolMaxIdle, poolMaxIdle)
        put(.poolIdleTimeout, poolIdleTimeout)
        put(.shutdownGrace, shutdownGrace)
        put(.via, via)
        put(.threads, threads)
        return values
    }

    private static func help(for option: ConfigOption) -> ArgumentHelp {
        let defaultNote = option.defaultText == "none" ? "" : " (default: \(option.defaultText))"
        return ArgumentHelp(
            "\(option.help)\(defaultNote) [env: \(option.environmentVariable)]",
            valueName: option.valueName
        )
    }
}

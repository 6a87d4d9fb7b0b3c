import ArgumentParser
import CoreMetrics
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPDNS
import Logging
import NIOCore
import NIOPosix
import Prometheus
import ProxyConfig
import ProxyKit
import ProxyUpstream
import ProxyChecks
import DNSListener
import NetworkWatch
import ProxyAdmin
import ProxyApp
import ServiceLifecycle

/// Runs the proxy (the default when no subcommand is named).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the proxy (the default command).",
        usage: OptionArguments.usage("[serve]"),
        discussion: """
            Every option can also be set by an environment variable (HTTPDNS_PROXY_<OPTION>) or a \
            key in the YAML file given by --config; flags > environment > config file > defaults. \
            A value follows its flag (--listen 127.0.0.1:3128) or an equals sign \
            (--listen=127.0.0.1:3128); a boolean flag alone means true.

            """ + "\n" + OptionHelp.groupedServeOptions
    )

    /// serve's options, read by the option table (OptionArguments).
    @Argument(parsing: .allUnrecognized, help: .hidden) var arguments: [String] = []

    func run() async throws {
        let flags = try OptionArguments.parse(arguments, for: Self.self)
        let signals = await SignalHandling.install()
        let environment = ProcessInfo.processInfo.environment
        let systemd = SystemdNotifier(environment: environment)
        let configuration = try LoadedConfiguration.loadToServe(flags, environment: environment)
        let logger = LoggingSetup.bootstrap(configuration)
        LoggingSetup.warnAboutUnknownVariables(in: environment, logger: logger)
        let accessLog: AccessLogWriter
        do {
            accessLog = try AccessLogWriter(target: configuration.accessLog, format: configuration.accessLogFormat)
        } catch {
            throw ValidationError("\(error)")
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: configuration.effectiveThreads)
        let hooks = ProxyApplication.Hooks(
            load: { try LoadedConfiguration.loadToServe(flags, environment: ProcessInfo.processInfo.environment) },
            ready: { systemd.ready() }, reloading: { systemd.reloading() }, version: BuildInfo.version,
            openFileLimit: OpenFileLimit.raiseToHardLimit())
        let application: ProxyApplication
        do {
            application = try ProxyApplication(
                configuration: configuration, group: group, accessLog: accessLog, metrics: MetricsSetup.bootstrap(configuration),
                hooks: hooks, logger: logger)
        } catch {
            try? await group.shutdownGracefully()
            throw ValidationError("\(error)")
        }
        var services = application.services
        services.append(
            SignalService(signals: signals, reloader: application.reloader, accessLog: accessLog, otherLogs: application.logFiles, systemd: systemd, logger: logger))
        if systemd.socketPath != nil { services.append(SystemdStoppingService(notifier: systemd)) }
        logger.info(
            "starting",
            metadata: [
                "version": "\(BuildInfo.version)", "provider": "\(configuration.provider.rawValue)",
                "resolver": "\(application.resolvers.description)", "threads": "\(configuration.effectiveThreads)",
                "config_file": "\(configuration.configFile ?? "none")",
            ].merging(application.proxy.accessSummary.mapValues { .string($0) }) { a, _ in a })
        let serviceGroup = ServiceGroup(
            configuration: .init(services: services.map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        defer { accessLog.flush() }  // lines of the last loop ticks
        do {
            try await serviceGroup.run()
        } catch let error as ListenerBindError {
            // A configuration error like the others (exit 64), told in the configured log format.
            logger.critical(
                "\(error)",
                metadata: [
                    "listener": "\(error.listener)", "address": "\(error.address)", "option": "\(error.option)",
                    "reason": "\(error.reason)", "hint": "\(error.hint)",
                ])
            application.shutdown()
            try? await group.shutdownGracefully()
            throw ExitCode(64)
        }
        application.shutdown()
        try await group.shutdownGracefully()
    }
}

/// Prometheus through swift-metrics, bootstrapped here only: the libraries record through the
/// swift-metrics API with handles made once at start.
enum MetricsSetup {
    static func bootstrap(_ configuration: ProxyConfiguration) -> ProxyApplication.Metrics? {
        guard configuration.metrics else { return nil }
        let registry = PrometheusCollectorRegistry()
        var factory = DescribedMetricsFactory(registry: registry)
        for name in ProxyMetrics.durationHistograms {
            factory.durationBuckets[name] = ProxyMetrics.durationBuckets
        }
        MetricsSystem.bootstrap(factory)
        let resolver = ResolverMetrics(provider: configuration.provider.rawValue)
        let process = ProcessMetrics()
        return ProxyApplication.Metrics(
            proxy: ProxyMetrics(version: BuildInfo.version), resolver: resolver, checks: BackgroundCheckMetrics()
        ) { cacheEntries in
            resolver.setCacheEntries(cacheEntries)
            process.update()
            return registry.emitToString()
        }
    }
}

enum LoggingSetup {
    static func bootstrap(_ configuration: ProxyConfiguration) -> Logger {
        let format: LineLogHandler.Format = configuration.logFormat == .json ? .json : .text
        let level = Logger.Level(rawValue: configuration.logLevel.rawValue) ?? .info
        LoggingSystem.bootstrap { label in LineLogHandler(label: label, format: format, level: level) }
        return Logger(label: "httpdns-proxy")
    }

    /// An `HTTPDNS_PROXY_…` variable no option reads is most likely a typo: said once at start.
    static func warnAboutUnknownVariables(in environment: [String: String], logger: Logger) {
        for name in ConfigurationLoader.unrecognizedEnvironmentVariables(in: environment) {
            var metadata: Logger.Metadata = ["variable": "\(name)"]
            if let suggestion = ConfigurationLoader.closestEnvironmentVariable(to: name) { metadata["did_you_mean"] = "\(suggestion)" }
            logger.warning("unknown environment variable ignored", metadata: metadata)
        }
    }
}

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
import ProxyCore
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
        for name in ConfigurationLoader.unrecognizedEnvironmentVariables(in: environment) {
            var metadata: Logger.Metadata = ["variable": "\(name)"]
            if let suggestion = ConfigurationLoader.closestEnvironmentVariable(to: name) { metadata["did_you_mean"] = "\(suggestion)" }
            logger.warning("unknown environment variable ignored", metadata: metadata)
        }

        let accessLog: AccessLogWriter
        do {
            accessLog = try AccessLogWriter(target: configuration.accessLog, format: configuration.accessLogFormat)
        } catch {
            throw ValidationError("\(error)")
        }

        let metrics = MetricsSetup.bootstrap(configuration)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: configuration.effectiveThreads)
        let resolvers = ResolverStack(configuration: configuration, logger: logger, metrics: metrics?.resolver)
        let proxy: ProxyServer
        do {
            proxy = try ProxyServer(
                configuration: configuration,
                group: group,
                resolver: resolvers.upstreamResolver,
                accessLog: accessLog,
                logger: logger,
                openFileLimit: OpenFileLimit.raiseToHardLimit(),
                metrics: metrics?.proxy,
                onBound: { _ in systemd.ready() }
            )
        } catch {
            resolvers.shutdown()
            try? await group.shutdownGracefully()
            throw ValidationError("\(error)")
        }
        // The group shuts services down in reverse order: the proxy drains first while the admin
        // listener still answers /healthz (with 503 "draining") and the resolver keeps answering.
        let reloader = ConfigurationReloader(
            flags: flags, configuration: configuration, proxy: proxy, resolvers: resolvers, metrics: metrics?.proxy, logger: logger)
        var metricsText: (@Sendable () -> String)? = nil
        if let metrics {
            let caching = resolvers.caching
            metricsText = { metrics.text(cacheEntries: caching?.entryCount ?? 0) }
        }
        var services: [any Service] = resolvers.services
        let audit = Self.systemDNSAudit(configuration, resolvers: resolvers, metrics: metrics?.checks, logger: logger)
        var auditReport: (@Sendable () -> SystemDNSAuditReport)? = nil
        if let audit {
            services.append(audit)
            auditReport = { audit.report }
        }
        let prober = proxy.addressProber(metrics: metrics?.checks)
        if let prober {
            prober.watch(resolvers.answers)
            services.append(prober)
        }
        var networkMonitor: NetworkMonitor?
        if configuration.networkMonitor {
            let eventLoop = group.next()
            let responder = NetworkChangeResponder(proxy: proxy, resolvers: resolvers, eventLoop: eventLoop, logger: logger)
            networkMonitor = NetworkMonitor(
                eventLoop: eventLoop, recorder: NetworkChangeRecorder(metrics: metrics?.proxy), logger: logger
            ) { change in
                // First forget when names were last compared and probed, so the answers refreshed
                // for the new network are looked at again at once, not after each name's interval.
                audit?.networkDidChange()
                prober?.networkDidChange()
                await responder.respond(to: change)
            }
        }
        let networkRecorder = networkMonitor?.recorder ?? NetworkChangeRecorder(monitor: "off")
        if let admin = configuration.adminListen {
            services.append(
                AdminServer(
                    host: admin.host, port: admin.port, group: group, logger: logger,
                    resolvers: resolvers, ipHealth: proxy.ipHealth, isDraining: { proxy.isDraining },
                    headerTimeout: configuration.headerTimeout, ownListeners: proxy.ownListeners,
                    access: { proxy.accessStats },
                    metricsText: metricsText,
                    pac: proxy.pacSettings,
                    retirePooled: { host, eventLoop in proxy.retirePooledConnections(host: host, on: eventLoop) },
                    allowedClients: { proxy.allowedClients },
                    reload: {
                        systemd.reloading()
                        defer { systemd.ready() }
                        let outcome = await reloader.reloadOffTheEventLoops(trigger: "POST /reload")
                        return (outcome.ok, outcome.message)
                    },
                    audit: auditReport,
                    network: { networkRecorder.snapshot },
                    errors: { proxy.recentErrors },
                    reloadStatus: { reloader.status },
                    summary: { proxy.summary(version: BuildInfo.version) }
                )
            )
        }
        if configuration.dnsListen != nil || configuration.dohListen != nil {
            // One responder for both listeners: one rate limit per client, one set of counters.
            let responder = DNSResponder.make(
                configuration: configuration, caching: resolvers.caching, health: proxy.ipHealth,
                allowed: { proxy.allowedClients }, metrics: metrics.map { _ in DNSMetrics() }, logger: logger)
            if let listen = configuration.dnsListen {
                services.append(DNSServer(listen: listen, group: group, responder: responder, logger: logger, ownListeners: proxy.ownListeners))
            }
            if let listen = configuration.dohListen {
                services.append(
                    DoHServer(
                        listen: listen, token: configuration.dohToken, requestTimeout: configuration.headerTimeout, group: group,
                        responder: responder, logger: logger, ownListeners: proxy.ownListeners))
            }
        }
        services.append(proxy)
        if let networkMonitor { services.append(networkMonitor) }
        services.append(SignalService(signals: signals, reloader: reloader, accessLog: accessLog, systemd: systemd, logger: logger))
        if systemd.socketPath != nil { services.append(SystemdStoppingService(notifier: systemd)) }
        logger.info(
            "starting",
            metadata: [
                "version": "\(BuildInfo.version)",
                "provider": "\(configuration.provider.rawValue)",
                "resolver": "\(resolvers.description)",
                "threads": "\(configuration.effectiveThreads)",
                "config_file": "\(configuration.configFile ?? "none")",
            ].merging(proxy.accessSummary.mapValues { .string($0) }) { a, _ in a }
        )
        let serviceGroup = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
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
            resolvers.shutdown()
            try? await group.shutdownGracefully()
            throw ExitCode(64)
        }
        resolvers.shutdown()
        try await group.shutdownGracefully()
        accessLog.flush()  // lines of the last loop ticks
    }
}

extension ServeCommand {
    /// `--compare-system-dns`: the audit, fed with the HTTPDNS answers (nil when off, or when the
    /// provider is `system` or `static`, whose answers are not HTTPDNS's).
    static func systemDNSAudit(
        _ configuration: ProxyConfiguration, resolvers: ResolverStack, metrics: BackgroundCheckMetrics?, logger: Logger
    ) -> SystemDNSAudit<ContinuousClock>? {
        guard configuration.compareSystemDNS else { return nil }
        guard resolvers.caching != nil, configuration.provider != .static else {
            logger.warning(
                "compare-system-dns has no effect: the provider is not an HTTPDNS service",
                metadata: ["provider": "\(configuration.provider.rawValue)"])
            return nil
        }
        let audit = SystemDNSAudit(rate: configuration.compareRate, stats: resolvers.stats, metrics: metrics, logger: logger)
        audit.watch(resolvers.answers)
        return audit
    }
}

/// Prometheus through swift-metrics, bootstrapped here only: the libraries record through the
/// swift-metrics API with handles made once at start.
struct MetricsSetup: Sendable {
    let registry: PrometheusCollectorRegistry
    let proxy: ProxyMetrics
    let resolver: ResolverMetrics
    let checks: BackgroundCheckMetrics

    static func bootstrap(_ configuration: ProxyConfiguration) -> MetricsSetup? {
        guard configuration.metrics else { return nil }
        let registry = PrometheusCollectorRegistry()
        var factory = DescribedMetricsFactory(registry: registry)
        for name in ProxyMetrics.durationHistograms {
            factory.durationBuckets[name] = ProxyMetrics.durationBuckets
        }
        MetricsSystem.bootstrap(factory)
        return MetricsSetup(
            registry: registry,
            proxy: ProxyMetrics(version: BuildInfo.version),
            resolver: ResolverMetrics(provider: configuration.provider.rawValue),
            checks: BackgroundCheckMetrics()
        )
    }

    /// The exposition text; gauges read at scrape time are set first.
    func text(cacheEntries: Int) -> String {
        resolver.setCacheEntries(cacheEntries)
        return registry.emitToString()
    }
}

enum LoggingSetup {
    static func bootstrap(_ configuration: ProxyConfiguration) -> Logger {
        let format: LineLogHandler.Format = configuration.logFormat == .json ? .json : .text
        let level = Logger.Level(rawValue: configuration.logLevel.rawValue) ?? .info
        LoggingSystem.bootstrap { label in LineLogHandler(label: label, format: format, level: level) }
        return Logger(label: "httpdns-proxy")
    }
}

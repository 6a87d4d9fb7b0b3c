import DNSListener
import HTTPDNS
import Logging
import NIOCore
import NetworkWatch
import ProxyAdmin
import ProxyChecks
import ProxyConfig
import ProxyKit
import ProxyUpstream
import ServiceLifecycle

/// The running proxy as one value: built from a configuration, it holds the services to run (the
/// resolver stack's, the checks, the admin, DNS and DoH listeners, the proxy listener, the network
/// monitor) in the order a service group should start them: it stops them in reverse, so the proxy
/// drains first while the admin listener still answers `/healthz` and the resolver keeps answering.
/// The executable only loads the configuration, sets up logging and metrics, adds what belongs to
/// the process (signals, systemd) and runs the services; tests build it without a command line.
package struct ProxyApplication: Sendable {
    /// What only the process knows, handed in.
    package struct Hooks: Sendable {
        /// Reads the configuration again as a start would (a reload applies what it returns).
        package var load: @Sendable () throws -> ProxyConfiguration
        /// The proxy listener is bound (systemd's READY=1), and again after each reload.
        package var ready: @Sendable () -> Void
        /// A reload begins (systemd's RELOADING=1).
        package var reloading: @Sendable () -> Void
        /// The version `/summary` shows.
        package var version: String
        /// The open-file limit the default connection limit derives from.
        package var openFileLimit: Int

        package init(
            load: @escaping @Sendable () throws -> ProxyConfiguration, ready: @escaping @Sendable () -> Void = {},
            reloading: @escaping @Sendable () -> Void = {}, version: String, openFileLimit: Int = OpenFileLimit.current()
        ) {
            self.load = load
            self.ready = ready
            self.reloading = reloading
            self.version = version
            self.openFileLimit = openFileLimit
        }
    }

    /// The metrics handles, when metrics are on, and the exposition text `/metrics` serves.
    package struct Metrics: Sendable {
        package var proxy: ProxyMetrics
        package var resolver: ResolverMetrics
        package var checks: BackgroundCheckMetrics
        /// The text at a scrape; gauges read at scrape time (the cache's size) are set first.
        package var text: @Sendable (_ cacheEntries: Int) -> String

        package init(
            proxy: ProxyMetrics, resolver: ResolverMetrics, checks: BackgroundCheckMetrics,
            text: @escaping @Sendable (_ cacheEntries: Int) -> String
        ) {
            self.proxy = proxy
            self.resolver = resolver
            self.checks = checks
            self.text = text
        }
    }

    package let resolvers: ResolverStack
    package let proxy: ProxyServer
    package let reloader: ConfigurationReloader
    /// The log files SIGUSR1 and SIGHUP reopen besides the access log (`dns-query-log`).
    package let logFiles: [AccessLogWriter]
    /// In start order.
    package let services: [any Service]

    /// Builds every part the configuration asks for; nothing listens until the services run. A
    /// configuration the proxy cannot start with (an unreadable CA file, a broken htpasswd file)
    /// throws, after releasing what was made.
    package init(
        configuration: ProxyConfiguration, group: any EventLoopGroup, accessLog: AccessLogWriter, metrics: Metrics?,
        hooks: Hooks, logger: Logger
    ) throws(ProxyServerSetupError) {
        let resolvers = ResolverStack(configuration: configuration, logger: logger, metrics: metrics?.resolver)
        let proxy: ProxyServer
        do {
            proxy = try ProxyServer(
                configuration: configuration, group: group, resolver: resolvers.upstreamResolver, accessLog: accessLog,
                logger: logger, openFileLimit: hooks.openFileLimit, metrics: metrics?.proxy, onBound: { _ in hooks.ready() })
        } catch {
            resolvers.shutdown()
            throw error
        }
        let reloader = ConfigurationReloader(
            load: hooks.load, configuration: configuration, proxy: proxy, resolvers: resolvers, metrics: metrics?.proxy, logger: logger)
        var services: [any Service] = resolvers.services
        let audit = Self.systemDNSAudit(configuration, resolvers: resolvers, metrics: metrics?.checks, logger: logger)
        if let audit { services.append(audit) }
        let prober = proxy.addressProber(metrics: metrics?.checks)
        if let prober {
            prober.watch(resolvers.answers)
            services.append(prober)
        }
        let networkMonitor = Self.networkMonitor(
            configuration, proxy: proxy, resolvers: resolvers, group: group, metrics: metrics?.proxy, logger: logger
        ) {
            // First forget when names were last compared and probed, so the answers refreshed for
            // the new network are looked at again at once, not after each name's interval.
            audit?.networkDidChange()
            prober?.networkDidChange()
        }
        // The query log is opened with the listeners it logs (StartupCheck vetted its path).
        let queryLog = (configuration.dnsListen != nil || configuration.dohListen != nil)
            ? (try? AccessLogWriter(target: configuration.dnsQueryLog)).map(DNSQueryLog.init(writer:)) : nil
        let dnsResponder = Self.dnsResponder(configuration, proxy: proxy, resolvers: resolvers, metrics: metrics, queryLog: queryLog, logger: logger)
        if let admin = configuration.adminListen {
            let backend = ApplicationAdminBackend(
                proxy: proxy, stack: resolvers, metrics: metrics, audit: audit,
                network: networkMonitor?.recorder ?? NetworkChangeRecorder(monitor: "off"), dns: dnsResponder, reloader: reloader,
                hooks: hooks)
            services.append(
                AdminServer(
                    settings: .init(host: admin.host, port: admin.port, headerTimeout: configuration.headerTimeout), group: group,
                    backend: backend, ownListeners: proxy.ownListeners, logger: logger))
        }
        if let dnsResponder {
            services += Self.dnsListeners(configuration, responder: dnsResponder, proxy: proxy, group: group, logger: logger)
        }
        services.append(proxy)
        if let networkMonitor { services.append(networkMonitor) }
        self.resolvers = resolvers
        self.proxy = proxy
        self.reloader = reloader
        self.logFiles = queryLog.map { [$0.writer] } ?? []
        self.services = services
    }

    /// Stops what the services do not own (the resolver stack's transport); after the services ran,
    /// or instead of running them.
    package func shutdown() {
        resolvers.shutdown()
    }
}

extension ProxyApplication {
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

    /// `--network-monitor`: watches the host's addresses and routes; on a change, `first`, then
    /// the proxy's response (health, pools, resolver).
    static func networkMonitor(
        _ configuration: ProxyConfiguration, proxy: ProxyServer, resolvers: ResolverStack, group: any EventLoopGroup,
        metrics: ProxyMetrics?, logger: Logger, first: @escaping @Sendable () -> Void
    ) -> NetworkMonitor? {
        guard configuration.networkMonitor else { return nil }
        let eventLoop = group.next()
        let responder = NetworkChangeResponder(proxy: proxy, resolvers: resolvers, eventLoop: eventLoop, logger: logger)
        return NetworkMonitor(eventLoop: eventLoop, recorder: NetworkChangeRecorder(metrics: metrics), logger: logger) { change in
            first()
            await responder.respond(to: change)
        }
    }

    /// `--dns-listen` and `--doh-listen` share one responder (one rate limit per client, one set
    /// of counters, one forwarded-answer cache); nil without either.
    static func dnsResponder(
        _ configuration: ProxyConfiguration, proxy: ProxyServer, resolvers: ResolverStack, metrics: Metrics?, queryLog: DNSQueryLog?,
        logger: Logger
    ) -> DNSResponder? {
        guard configuration.dnsListen != nil || configuration.dohListen != nil else { return nil }
        return DNSResponder.make(
            configuration: configuration, caching: resolvers.caching, health: proxy.ipHealth,
            allowed: { proxy.allowedClients }, metrics: metrics.map { _ in DNSMetrics() }, queryLog: queryLog,
            localRecords: resolvers.localRecords, logger: logger)
    }

    static func dnsListeners(
        _ configuration: ProxyConfiguration, responder: DNSResponder, proxy: ProxyServer, group: any EventLoopGroup, logger: Logger
    ) -> [any Service] {
        var services: [any Service] = []
        if let listen = configuration.dnsListen {
            services.append(DNSServer(listen: listen, group: group, responder: responder, logger: logger, ownListeners: proxy.ownListeners))
        }
        if let listen = configuration.dohListen {
            services.append(
                DoHServer(
                    listen: listen, token: configuration.dohToken, requestTimeout: configuration.headerTimeout, group: group,
                    responder: responder, logger: logger, ownListeners: proxy.ownListeners))
        }
        return services
    }
}

/// What the admin listener reads from the running application.
struct ApplicationAdminBackend: AdminBackend {
    let proxy: ProxyServer
    let stack: ResolverStack
    let metrics: ProxyApplication.Metrics?
    let audit: SystemDNSAudit<ContinuousClock>?
    let network: NetworkChangeRecorder
    let dns: DNSResponder?
    let reloader: ConfigurationReloader
    let hooks: ProxyApplication.Hooks

    var isDraining: Bool { proxy.isDraining }
    var allowedClients: [CIDR]? { proxy.allowedClients }
    var resolvers: ResolverStack? { stack }
    var ipHealth: IPHealthRegistry? { proxy.ipHealth }
    var pac: PACSettings? { proxy.pacSettings }
    var reloads: Bool { true }

    func accessStats() -> AccessStats? { proxy.accessStats }
    func metricsText() -> String? { metrics.map { $0.text(stack.caching?.entryCount ?? 0) } }
    func auditReport() -> SystemDNSAuditReport? { audit?.report }
    func networkStats() -> NetworkChangeStats? { network.snapshot }
    func recentErrors() -> RecentErrorsReport? { proxy.recentErrors }
    func reloadStatus() -> ReloadStatus? { reloader.status }
    func summary() -> AdminSummary? { proxy.summary(version: hooks.version) }

    func reload() async -> (ok: Bool, message: String) {
        hooks.reloading()
        defer { hooks.ready() }
        let outcome = await reloader.reloadOffTheEventLoops(trigger: "POST /reload")
        return (outcome.ok, outcome.message)
    }

    func retirePooledConnections(host: String?, on eventLoop: any EventLoop) -> EventLoopFuture<Int>? {
        proxy.retirePooledConnections(host: host, on: eventLoop)
    }

    func forwardedAnswers() -> [ForwardedAnswerListing]? {
        dns?.forwardedAnswers().map { ForwardedAnswerListing(name: $0.name, type: $0.type, rcode: $0.rcode, ttl: $0.ttl) }
    }

    func purgeForwardedAnswers(_ host: String?) -> Int? {
        dns?.purgeForwardedAnswers(host)
    }
}

import CurlTransport
import ProxyKit
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPDNS
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ProxyConfig
import ServiceLifecycle

/// Builds what the configuration asks for: transport → provider (with server failover) → cache →
/// the upstream resolver the proxy uses, plus the long-running services (cache runner, static list
/// refresher) the service group must run.
package final class ResolverStack: Sendable, CustomStringConvertible {
    package let upstreamResolver: any UpstreamResolver
    package let services: [any Service]
    package let stats: ResolverStats
    package let caching: CachingResolver<ContinuousClock>?
    /// New answers of the HTTPDNS service (alibaba, json, doh; not a static list), for the audit
    /// and address probing.
    package let answers: HTTPDNSAnswerFeed
    /// `--hosts-file`: asked first by `upstreamResolver` and by the DNS listener.
    package let localRecords: LocalRecords
    /// The provider queries go to and the families asked for: a reload swaps them (the cache stays).
    struct Querying: Sendable {
        var provider: any HTTPDNSProvider
        var families: AddressFamilies
        /// Alibaba v2's service-IP scheduler (nil for every other provider).
        var scheduler: AlibabaServiceScheduler?
    }

    /// What `makeProvider` builds.
    struct Made {
        var provider: any HTTPDNSProvider
        var staticList: StaticListProvider?
        var scheduler: AlibabaServiceScheduler?
    }

    private let querying: NIOLockedValueBox<Querying>?
    /// The HTTPDNS resolver (nil for `--provider system`), for reloads.
    private let httpdns: HTTPDNSUpstreamResolver?
    var provider: (any HTTPDNSProvider)? { querying?.withLockedValue { $0.provider } }
    let staticList: StaticListProvider?
    let transport: CurlTransport?
    let families: AddressFamilies
    /// `ip-family` as configured (a reload may change it): `auto` is detected again on a network change.
    private let familySetting: NIOLockedValueBox<IPFamily>
    private let logger: Logger
    let fallbackEnabled: Bool
    /// `--system-dns-domain` at start (for `httpdns-proxy resolve`).
    private let systemOnly: SystemDNSDomains
    private let schedulerRunner: SchedulerRunner?
    package let description: String

    /// Alibaba v2's current service IPs and last scheduling result (nil: not Alibaba v2).
    package var schedulerSnapshot: AlibabaSchedulerSnapshot? {
        querying?.withLockedValue { $0.scheduler }?.snapshot
    }

    /// `metrics`: the resolver's Prometheus counters (nil: none).
    package init(configuration: ProxyConfiguration, logger: Logger, metrics: ResolverMetrics? = nil) {
        // The resolver's own connections carry --outbound-mark like the origin connections.
        CurlSocketMark.set(configuration.outboundMark)
        let stats = ResolverStats(metrics: metrics)
        self.stats = stats
        let answers = HTTPDNSAnswerFeed()
        self.answers = answers
        let feedsAnswers = configuration.provider != .static
        self.logger = logger
        self.fallbackEnabled = configuration.systemFallback
        self.systemOnly = configuration.systemDNSDomains
        let families: AddressFamilies
        switch configuration.ipFamily {
        case .ipv4: families = .ipv4
        case .ipv6: families = .ipv6
        case .both: families = .both
        case .auto: families = HostAddressFamilies.detect()
        }
        self.families = families
        self.familySetting = NIOLockedValueBox(configuration.ipFamily)
        let localRecords = Self.loadLocalRecords(configuration, logger: logger)
        self.localRecords = localRecords

        guard configuration.provider != .system else {
            upstreamResolver = LocalRecordsResolver(records: localRecords, inner: SystemResolver())
            services = []
            caching = nil
            querying = nil
            httpdns = nil
            staticList = nil
            transport = nil
            schedulerRunner = nil
            description = "system"
            return
        }

        let transport = CurlTransport()
        self.transport = transport
        let made = Self.makeProvider(configuration, transport: transport, logger: logger)
        let (provider, staticList) = (made.provider, made.staticList)
        let url = configuration.effectiveResolverURL ?? ""
        let pins = configuration.effectiveResolverIPs.map(\.description)
        let querying = NIOLockedValueBox(Querying(provider: provider, families: families, scheduler: made.scheduler))
        self.querying = querying
        self.staticList = staticList

        let cacheConfiguration = CachingResolverConfiguration(
            cache: Self.cacheConfiguration(configuration),
            // Names for the system resolver only are neither kept fresh nor preloaded through HTTPDNS.
            keepaliveDomains: Set(configuration.keepaliveDomains.filter { !configuration.systemDNSDomains.matches($0) }),
            preload: configuration.preload.filter { !configuration.systemDNSDomains.matches($0) },
            cacheFile: configuration.cacheFile
        )
        let batch: CachingResolver<ContinuousClock>.BatchQuery?
        if provider.supportsBatch {
            // After a reload to a provider without batches, every name is queried alone (a batch
            // answer that lacks a name means exactly that).
            batch = { hosts in
                let current = querying.withLockedValue { $0 }
                guard current.provider.supportsBatch else { return [:] }
                let results = try await current.provider.resolveBatch(hosts, families: current.families)
                if feedsAnswers {
                    for case let (host, .success(answer)) in results { answers.publish(host, answer) }
                }
                return results
            }
        } else {
            batch = nil
        }
        let caching = CachingResolver(
            configuration: cacheConfiguration,
            clock: ContinuousClock(),
            query: { host in
                let current = querying.withLockedValue { $0 }
                let answer = try await current.provider.resolve(host, families: current.families)
                if feedsAnswers { answers.publish(host, answer) }
                return answer
            },
            batchQuery: batch,
            stats: stats,
            logger: logger
        )
        self.caching = caching
        let httpdns = HTTPDNSUpstreamResolver(
            caching: caching,
            system: configuration.systemFallback ? SystemResolver() : nil,
            systemOnly: configuration.systemDNSDomains,
            stats: stats,
            logger: logger
        )
        self.httpdns = httpdns
        upstreamResolver = LocalRecordsResolver(records: localRecords, inner: httpdns)
        var services: [any Service] = [caching]
        if let staticList { services.insert(staticList, at: 0) }
        // Any provider that can be reloaded into Alibaba v2 may need a scheduler later.
        let runner = configuration.provider == .static ? nil : SchedulerRunner(initial: made.scheduler)
        if let runner { services.append(runner) }
        self.schedulerRunner = runner
        self.services = services
        let api = configuration.provider == .alibaba ? " api=\(configuration.alibabaAPI.rawValue)" : ""
        description = "\(provider.name)\(api) \(url) pinned to [\(pins.joined(separator: ", "))] families=\(families.rawValue)"
    }

    /// The provider the configuration names (with its static list refresher for `static`).
    static func makeProvider(_ configuration: ProxyConfiguration, transport: CurlTransport, logger: Logger) -> Made {
        let url = configuration.effectiveResolverURL ?? ""
        let pins = configuration.effectiveResolverIPs.map(\.description)
        // In front of a fallback provider, a dead service is probed again after resolver-timeout,
        // not 30 s: the chain returns to it as soon as it answers.
        let servers = configuration.fallbackProvider == nil
            ? ResolverServers(ips: pins) : ResolverServers(ips: pins, backoff: configuration.resolverTimeout.duration)
        let client = ResolverClient(
            transport: transport,
            servers: servers,
            timeout: configuration.resolverTimeout.duration,
            caFile: configuration.resolverCAFile,
            logger: logger
        )
        let provider: any HTTPDNSProvider
        var staticList: StaticListProvider?
        var scheduler: AlibabaServiceScheduler?
        switch configuration.provider {
        case .alibaba where configuration.alibabaAPI == .v2:
            let made = makeAlibabaV2(configuration, servers: servers, client: client, transport: transport, logger: logger)
            provider = made.provider
            scheduler = made.scheduler
        case .alibaba:
            provider = AlibabaProvider(
                serviceRoot: url,
                accountID: configuration.accountID ?? "",
                secret: configuration.secret,
                client: client,
                unixTime: { Int(Date().timeIntervalSince1970) }
            )
        case .json:
            provider = DoHJSONProvider(
                endpoint: url,
                signature: configuration.dohSignature.map { signature in
                    DoHJSONSignature(
                        uid: signature.uid,
                        accessKeyID: signature.accessKeyID,
                        accessKeySecret: signature.accessKeySecret,
                        timestampUnit: configuration.dohTimestampUnit == .milliseconds ? .milliseconds : .seconds
                    )
                },
                client: client,
                bearerToken: configuration.resolverToken,
                unixTimeMillis: { Int(Date().timeIntervalSince1970 * 1000) }
            )
        case .doh:
            provider = DoHWireProvider(
                endpoint: url, method: configuration.dohMethod == .post ? .post : .get, client: client, bearerToken: configuration.resolverToken
            )
        case .tencent:
            provider = makeTencent(configuration, endpoint: url, client: client)
        case .static:
            let source: StaticListProvider.Source
            switch configuration.staticListSource {
            case .url(let listURL)?: source = .url(listURL.text)
            case .file(let path)?: source = .file(path)
            case nil: source = .file("")
            }
            let list = StaticListProvider(
                source: source,
                refresh: configuration.staticRefresh.duration,
                transport: transport,
                timeout: configuration.resolverTimeout.duration,
                caFile: configuration.resolverCAFile,
                pinnedAddresses: pins,
                logger: logger
            )
            staticList = list
            provider = list
        case .system:
            preconditionFailure("handled above")
        }
        if let second = configuration.fallbackConfiguration, configuration.provider != .static {
            // The fallback's own scheduler (Alibaba v2) is not run: it uses its bootstrap IPs.
            let made = makeProvider(second, transport: transport, logger: logger)
            let chain = ChainedProvider(first: provider, second: made.provider, retryAfter: configuration.resolverTimeout.duration, logger: logger)
            return Made(provider: chain, staticList: staticList, scheduler: scheduler)
        }
        return Made(provider: provider, staticList: staticList, scheduler: scheduler)
    }

    static func cacheConfiguration(_ configuration: ProxyConfiguration) -> DNSCacheConfiguration {
        DNSCacheConfiguration(
            minTTL: configuration.minTTL.duration,
            maxTTL: configuration.maxTTL.duration,
            negativeTTLCap: configuration.negativeTTL.duration,
            capacity: configuration.cacheSize,
            maxStale: configuration.maxStale.duration,
            immutable: configuration.cacheImmutable
        )
    }

    static func families(_ family: IPFamily) -> AddressFamilies {
        switch family {
        case .ipv4: .ipv4
        case .ipv6: .ipv6
        case .both: .both
        case .auto: HostAddressFamilies.detect()
        }
    }

    /// How the HTTPDNS service is asked (option names): a change builds a new provider.
    static var providerFields: Set<String> { ConfigOption.names(reloading: [.resolverService, .resolverFamily]) }

    /// Resolver options a reload applies while the cache is kept (by name, from the option
    /// table's reload classes): for the HTTPDNS services the service and how it is asked, and for
    /// every provider the families, the cache's clamps and the fallback. A static list's source
    /// and refresh, keepalive and preload names, and the cache file are set up at start.
    package static func reloadableFields(for provider: ProviderKind) -> Set<String> {
        switch provider {
        case .alibaba, .json, .doh, .tencent: ConfigOption.names(reloading: [.resolverService, .resolverFamily, .resolverCache])
        case .static: ConfigOption.names(reloading: [.resolverFamily, .resolverCache])
        case .system: []
        }
    }

    /// Whether `new` can be applied to this stack live (same kind of provider set-up).
    package func canReload(from old: ProxyConfiguration, to new: ProxyConfiguration) -> Bool {
        if old.provider == new.provider { return true }
        let live: Set<ProviderKind> = [.alibaba, .json, .doh, .tencent]
        return live.contains(old.provider) && live.contains(new.provider)
    }

    /// Applies `new`'s resolver settings: a new provider (and client) for the same transport,
    /// swapped under the cache, which stays; the cache's clamps; the fallback. Callers check
    /// `canReload` first.
    package func reload(to new: ProxyConfiguration, changed: Set<String>) {
        familySetting.withLockedValue { $0 = new.ipFamily }
        guard let querying, let caching, let httpdns, let transport else { return }
        if new.provider != .static, !changed.isDisjoint(with: Self.providerFields) {
            // A new provider starts its server rotation afresh; an unchanged one keeps it.
            let made = Self.makeProvider(new, transport: transport, logger: logger)
            querying.withLockedValue { $0 = Querying(provider: made.provider, families: Self.families(new.ipFamily), scheduler: made.scheduler) }
            schedulerRunner?.replace(with: made.scheduler)
        } else if changed.contains(ConfigOption.ipFamily.name) {
            querying.withLockedValue { $0.families = Self.families(new.ipFamily) }
        }
        caching.reconfigureCache(Self.cacheConfiguration(new))
        httpdns.setSystemFallback(new.systemFallback)
        httpdns.setSystemOnly(new.systemDNSDomains)
    }

    /// With `ip-family auto`: the families this host can use now, swapped in when they differ
    /// from those asked for (returned then; nil otherwise).
    func redetectFamilies() -> AddressFamilies? {
        guard let querying, familySetting.withLockedValue({ $0 }) == .auto else { return nil }
        let detected = HostAddressFamilies.detect()
        return querying.withLockedValue { current -> AddressFamilies? in
            guard current.families != detected else { return nil }
            current.families = detected
            return detected
        }
    }

    package func shutdown() {
        transport?.shutdown()
    }

    /// What `httpdns-proxy resolve` prints.
    package struct ResolveReport: Error, Sendable {
        package var text: String
    }

    /// One query straight to the provider (no cache), or getaddrinfo for `--provider system`.
    package func resolveOnce(_ host: String) async -> Result<ResolveReport, ResolveReport> {
        let started = ContinuousClock.now
        if let local = localReport(host, started: started) { return .success(local) }
        guard let provider, !systemOnly.matches(host) else {
            do {
                let addresses = try SystemResolver.getaddrinfo(host: host, port: 0)
                let rtt = ContinuousClock.now - started
                let v4 = addresses.filter { $0.protocol == .inet }.compactMap(\.ipAddress)
                let v6 = addresses.filter { $0.protocol == .inet6 }.compactMap(\.ipAddress)
                return .success(ResolveReport(text: Self.report(host: host, provider: "system", source: "system", v4: v4, v6: v6, ttl: nil, rtt: rtt, server: nil)))
            } catch {
                return .failure(ResolveReport(text: "\(host): system DNS has no answer: \(error)"))
            }
        }
        do {
            if let staticList { try await staticList.reload() }
            // One-shot: ask for the current service IPs first, as a running proxy would have.
            if let scheduler = querying?.withLockedValue({ $0.scheduler }) { await scheduler.refreshNow() }
            let answer = try await provider.resolve(host, families: families)
            let rtt = ContinuousClock.now - started
            return .success(ResolveReport(
                text: Self.report(host: host, provider: provider.name, source: "httpdns", v4: answer.ipv4, v6: answer.ipv6, ttl: answer.ttl, rtt: rtt, server: answer.serverIP)
            ))
        } catch {
            return .failure(ResolveReport(text: "\(host): \(provider.name) provider has no answer: \(error.kind.description): \(error.message)"))
        }
    }

    static func report(host: String, provider: String, source: String, v4: [String], v6: [String], ttl: Duration?, rtt: Duration, server: String?) -> String {
        var lines = ["host:     \(host)", "provider: \(provider)", "source:   \(source)"]
        if let server { lines.append("server:   \(server)") }
        let tenths = Int(((Double(rtt.components.seconds) * 1000 + Double(rtt.components.attoseconds) / 1e15) * 10).rounded())
        lines.append("rtt:      \(tenths / 10).\(tenths % 10) ms")
        if let ttl { lines.append("ttl:      \(ttl.components.seconds) s") }
        for ip in v4 { lines.append("A         \(ip)") }
        for ip in v6 { lines.append("AAAA      \(ip)") }
        return lines.joined(separator: "\n")
    }
}

import HTTPDNS
import Logging
import NIOCore
import ProxyConfig
import ProxyKit
import Synchronization

/// HTTPDNS first (cache, then the service through single-flight), system DNS when HTTPDNS has no
/// answer. A cache hit completes synchronously on the caller's event loop: no task, no thread hop.
package final class HTTPDNSUpstreamResolver: UpstreamResolver {
    let caching: CachingResolver<ContinuousClock>
    private let systemResolver: SystemResolver
    /// `--system-fallback`, which a reload may change.
    private let fallbackEnabled: Atomic<Bool>
    /// `--system-dns-domain`, which a reload may change: names only the system resolver is asked.
    private let systemOnly: Mutex<SystemDNSDomains>
    let stats: ResolverStats
    let logger: Logger

    /// The fallback, or nil when it is disabled (`--system-fallback false`).
    var system: SystemResolver? { fallbackEnabled.load(ordering: .relaxed) ? systemResolver : nil }

    /// `system`: the fallback; nil when it is disabled (`--system-fallback false`).
    package init(
        caching: CachingResolver<ContinuousClock>, system: SystemResolver?, systemOnly: SystemDNSDomains = SystemDNSDomains(),
        stats: ResolverStats, logger: Logger
    ) {
        self.caching = caching
        self.systemOnly = Mutex(systemOnly)
        self.systemResolver = system ?? SystemResolver()
        self.fallbackEnabled = Atomic(system != nil)
        self.stats = stats
        self.logger = logger
    }

    /// A reload turning the system-DNS fallback on or off.
    func setSystemFallback(_ enabled: Bool) {
        fallbackEnabled.store(enabled, ordering: .relaxed)
    }

    /// A reload changing `--system-dns-domain`.
    func setSystemOnly(_ domains: SystemDNSDomains) {
        systemOnly.withLock { $0 = domains }
    }

    package func resolve(host: String, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution> {
        if systemOnly.withLock({ $0.matches(host) }) {
            // An internal name: the HTTPDNS service (and its cache) never sees it.
            return systemResolver.resolve(host: host, port: port, on: eventLoop)
        }
        if let hit = caching.cached(host) {
            switch hit {
            case .fresh(let answer, let remaining):
                if let resolution = Self.resolution(answer, port: port, source: .cache, lifetime: TimeAmount(remaining)) {
                    return eventLoop.makeSucceededFuture(resolution)
                }
            case .stale(let answer, _):
                if let resolution = Self.resolution(answer, port: port, source: .stale, lifetime: .zero) {
                    return eventLoop.makeSucceededFuture(resolution)
                }
            case .negative(let failure):
                return fallback(host: host, port: port, failure: failure, on: eventLoop)
            }
        }
        let promise = eventLoop.makePromise(of: Resolution.self)
        promise.completeWithTask { [caching] in
            do {
                let (answer, source) = try await caching.resolve(host)
                // A new answer lasts as long as the cache keeps it; one found in the cache meanwhile
                // (its remaining lifetime unknown here) or served stale is checked on first reuse.
                let lifetime = source == .query ? TimeAmount(caching.cachedTTL(of: answer)) : .zero
                if let resolution = Self.resolution(answer, port: port, source: Self.source(source), lifetime: lifetime) {
                    return resolution
                }
                throw ResolveFailure(kind: .noData, message: "no usable addresses")
            } catch let failure as ResolveFailure {
                return try await self.fallback(host: host, port: port, failure: failure, on: eventLoop).get()
            }
        }
        return promise.futureResult
    }

    private func fallback(host: String, port: Int, failure: ResolveFailure, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution> {
        guard let system else {
            return eventLoop.makeFailedFuture(
                ProxyError(.resolveFailed, "cannot resolve \(host): HTTPDNS has no answer (\(failure.message)) and system DNS fallback is off")
            )
        }
        stats.recordFallback(host)
        logger.debug(
            "HTTPDNS had no answer; using system DNS",
            metadata: ["proxy.host": "\(host)", "error": "\(failure.shortDescription)"]
        )
        return system.resolve(host: host, port: port, on: eventLoop).map { resolution in
            Resolution(addresses: resolution.addresses, source: .fallback)
        }.flatMapErrorThrowing { error in
            let system = (error as? SystemResolverError).map { "system DNS: \($0.reason)" } ?? "\(error)"
            throw ProxyError(.resolveFailed, "cannot resolve \(host): HTTPDNS has no answer (\(failure.message)); \(system)")
        }
    }

    /// Every address HTTPDNS gave failed to connect: ask system DNS (when the fallback is on),
    /// counted as a fallback in the statistics. The connector drops the addresses already tried.
    package func fallback(after failed: Resolution, host: String, port: Int, reason: String, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution>? {
        guard let system, [.httpdns, .cache, .stale].contains(failed.source) else { return nil }
        stats.recordFallback(host, reason: "all_addresses_failed")
        logger.info(
            "every HTTPDNS address failed; trying system DNS",
            metadata: ["proxy.host": "\(host)", "addresses": "\(failed.addresses.count)", "error": "\(reason)"]
        )
        return system.resolve(host: host, port: port, on: eventLoop).map { resolution in
            Resolution(addresses: resolution.addresses, source: .fallback)
        }
    }

    /// An HTTPDNS address stays leased while the cache's current answer for `host` still holds it:
    /// until that answer expires when fresh, briefly when stale (the lookup itself starts the
    /// refresh, and counts as a use for hot-name prefetch, as any cache hit does). An answer from
    /// system DNS cannot be asked again without a query: such a connection is dialed afresh.
    package func renewLease(host: String, ip: String, source: ResolutionSource, now: NIODeadline) -> ConnectionLease.Verdict {
        guard [.httpdns, .cache, .stale].contains(source) else { return ConnectionLease.renewalWithoutCache(source) }
        if systemOnly.withLock({ $0.matches(host) }) { return .retire(reason: "name now resolved by system DNS only") }
        switch caching.cached(host) {
        case .fresh(let answer, let remaining):
            guard Self.answer(answer, holds: ip) else { return .retire(reason: "address no longer in the HTTPDNS answer") }
            return .renew(until: now + TimeAmount(remaining))
        case .stale(let answer, _):
            guard Self.answer(answer, holds: ip) else { return .retire(reason: "address no longer in the HTTPDNS answer") }
            return .renew(until: now + ConnectionLease.staleRecheck)
        case .negative:
            return .retire(reason: "HTTPDNS has no answer now")
        case nil:
            return .retire(reason: "answer no longer cached")
        }
    }

    /// Whether `answer` lists `ip`, compared as addresses (an IPv6 address has many spellings).
    static func answer(_ answer: ResolvedAnswer, holds ip: String) -> Bool {
        if answer.ipv4.contains(ip) || answer.ipv6.contains(ip) { return true }
        guard let wanted = IPAddress(ip) else { return false }
        return (wanted.isIPv4 ? answer.ipv4 : answer.ipv6).contains { IPAddress($0) == wanted }
    }

    static func source(_ source: AnswerSource) -> ResolutionSource {
        switch source {
        case .cache: .cache
        case .stale: .stale
        case .query: .httpdns
        }
    }

    static func resolution(_ answer: ResolvedAnswer, port: Int, source: ResolutionSource, lifetime: TimeAmount? = nil) -> Resolution? {
        var addresses: [SocketAddress] = []
        addresses.reserveCapacity(answer.ipv4.count + answer.ipv6.count)
        // Two loops rather than `ipv6 + ipv4`: no temporary array on every cache hit.
        for ip in answer.ipv6 {
            if let address = try? SocketAddress(ipAddress: ip, port: port) { addresses.append(address) }
        }
        for ip in answer.ipv4 {
            if let address = try? SocketAddress(ipAddress: ip, port: port) { addresses.append(address) }
        }
        return addresses.isEmpty ? nil : Resolution(addresses: addresses, source: source, lifetime: lifetime)
    }
}

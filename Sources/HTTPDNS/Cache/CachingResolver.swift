#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// The resolver the proxy asks: a `DNSCache` behind a lock, in front of an HTTPDNS query function.
///
/// - `cached(_:)` is the hot path: synchronous, never suspends, never does I/O.
/// - `resolve(_:)` adds single-flight queries on a miss: one upstream query per name however many
///   callers wait for it.
/// - `run()` is the only place work happens in the background (queries, preload, stale refresh,
///   prefetch, persistence), all as children of its task group, so nothing outlives the service.
public final class CachingResolver<C: Clock>: Service, Sendable where C.Duration == Duration {
    public typealias Configuration = CachingResolverConfiguration
    public typealias Source = AnswerSource
    /// Resolves one name through the HTTPDNS service; should throw `ResolveFailure`.
    public typealias Query = @Sendable (String) async throws -> ResolvedAnswer
    /// Resolves several names in one request (Alibaba's batch API); names missing from the
    /// result are queried one by one.
    public typealias BatchQuery = @Sendable ([String]) async throws -> [String: Result<ResolvedAnswer, ResolveFailure>]

    struct Answered: Sendable {
        var answer: ResolvedAnswer
        var source: AnswerSource
    }

    typealias Outcome = Result<Answered, ResolveFailure>

    struct Waiter: Sendable {
        var id: UInt64
        var continuation: CheckedContinuation<Outcome, Never>
    }

    enum JoinAction {
        case resume(Outcome)
        case submit
        case wait
    }

    enum Phase: Sendable {
        /// Queries are buffered until `run()` starts.
        case idle
        case running
        /// `run()` has returned: nothing will answer queries any more.
        case stopped
    }

    struct State: Sendable {
        var cache: DNSCache<C.Instant>
        /// Names with a query or refresh under way, and the callers waiting for its answer. Keeps
        /// every name to one query at a time.
        var inflight: [String: [Waiter]] = [:]
        var nextWaiterID: UInt64 = 0
        var phase = Phase.idle

        /// Claims a refresh of `key` after a stale hit; `false` if one runs already or recently failed.
        mutating func claimRefresh(_ key: String, now: C.Instant) -> Bool {
            guard phase != .stopped, inflight[key] == nil, cache.beginRefresh(key, now: now) else { return false }
            inflight[key] = []
            return true
        }
    }

    let configuration: Configuration
    let clock: C
    let query: Query
    let batchQuery: BatchQuery?
    public let stats: ResolverStats
    let logger: Logger
    let wallClock: @Sendable () -> Date
    /// `configuration.keepaliveDomains`, normalised.
    let keepalive: Set<String>
    let state: NIOLockedValueBox<State>
    /// Queries for the runner: each element is a group of names already marked in flight.
    let jobs: AsyncStream<[String]>
    let jobSink: AsyncStream<[String]>.Continuation
    let prefetchWake = PrefetchWakeSignal()

    /// - Parameters:
    ///   - clock: drives TTLs and all background timers (a manual clock in tests).
    ///   - wallClock: the time written to and compared with the cache file; default the system time.
    public init(
        configuration: Configuration,
        clock: C,
        query: @escaping Query,
        batchQuery: BatchQuery? = nil,
        stats: ResolverStats,
        logger: Logger,
        wallClock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.clock = clock
        self.query = query
        self.batchQuery = batchQuery
        self.stats = stats
        self.logger = logger
        self.wallClock = wallClock
        self.keepalive = Set(configuration.keepaliveDomains.map(\.cacheKey))
        self.state = NIOLockedValueBox(State(cache: DNSCache(configuration: configuration.cache)))
        (self.jobs, self.jobSink) = AsyncStream.makeStream(of: [String].self)
        let state = self.state
        stats.addPendingHitsSource { [weak stats] in
            let hits = state.withLockedValue { $0.cache.takeUnreportedHits() }
            stats?.recordHits(hits)
        }
    }

    /// Hands the hit counts of removed entries to `stats` once enough have piled up, so that a cache
    /// churning through names without anyone reading the statistics stays bounded.
    func reportHitsOfRemovedEntriesIfMany() {
        let hits = state.withLockedValue { state -> [(name: String, hits: HitCounts)] in
            guard state.cache.unreportedOfRemoved.count >= 256 else { return [] }
            return state.cache.takeUnreportedHitsOfRemoved()
        }
        stats.recordHits(hits)
    }

    /// The cached answer for `name`, if any, without suspending: the proxy's hot path. A stale hit
    /// queues one background refresh (deduplicated across callers). With the real clock the
    /// overload below runs instead.
    public func cached(_ name: String) -> CacheHit? {
        lookUpCached(name)
    }

    @inline(__always)
    func lookUpCached(_ name: String) -> CacheHit? {
        let key = name.cacheKey
        let now = clock.now
        let (lookup, hits, refresh) = state.withLockedValue { state in
            let (lookup, hits) = state.cache.lookupCountingHit(key, now: now)
            var refresh = false
            if case .stale = lookup {
                refresh = state.claimRefresh(key, now: now)
            }
            return (lookup, hits, refresh)
        }
        if refresh {
            jobSink.yield([key])
        }
        switch lookup {
        // The hit was counted in the entry; `stats` collects it when read (`reportHits`).
        case .fresh(let answer, let remaining):
            if hits == configuration.hotThreshold { prefetchWake.signal() }
            stats.metrics?.lookup(.hit)
            return .fresh(answer, remaining: remaining)
        case .stale(let answer, let age):
            if hits == configuration.hotThreshold { prefetchWake.signal() }
            stats.metrics?.lookup(.stale)
            return .stale(answer, age: age)
        case .negative(let failure):
            stats.metrics?.lookup(.negative)
            return .negative(failure)
        case .miss:
            return nil
        }
    }

    /// How long `answer` stays in the cache once stored: its TTL clamped to min-ttl...max-ttl.
    public func cachedTTL(of answer: ResolvedAnswer) -> Duration {
        state.withLockedValue { $0.cache.configuration.clamp(answer.ttl) }
    }

    /// The answer for `name`: from the cache, else from one shared query. A failed query is
    /// answered with a stale entry when there is one. The query belongs to `run()`, so a caller
    /// that is cancelled stops waiting (with `.cancelled`) without cancelling it for the others.
    public func resolve(_ name: String) async throws(ResolveFailure) -> (answer: ResolvedAnswer, source: Source) {
        let key = name.cacheKey
        switch cached(key) {
        case .fresh(let answer, _): return (answer, .cache)
        case .stale(let answer, _): return (answer, .stale)
        case .negative(let failure): throw failure
        case nil: break
        }
        guard !key.isEmpty else {
            throw ResolveFailure(kind: .malformed, message: "empty host name")
        }
        let id = state.withLockedValue { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                join(key, waiter: Waiter(id: id, continuation: continuation))
            }
        } onCancel: {
            let waiter = state.withLockedValue { state -> Waiter? in
                guard let index = state.inflight[key]?.firstIndex(where: { $0.id == id }) else { return nil }
                return state.inflight[key]!.remove(at: index)
            }
            waiter?.continuation.resume(returning: .failure(ResolveFailure(kind: .cancelled, message: "caller cancelled")))
        }
        let answered = try outcome.get()
        return (answered.answer, answered.source)
    }

    /// Waits for the query of `key`, starting it if nobody else has.
    private func join(_ key: String, waiter: Waiter) {
        let now = clock.now
        let action = state.withLockedValue { state -> JoinAction in
            if state.phase == .stopped {
                return .resume(.failure(.resolverStopped))
            }
            if Task.isCancelled {
                // The cancellation handler ran before the waiter was registered.
                return .resume(.failure(ResolveFailure(kind: .cancelled, message: "caller cancelled")))
            }
            // A query may have completed since `cached` missed.
            switch state.cache.peek(key, now: now) {
            case .fresh(let answer, _): return .resume(.success(Answered(answer: answer, source: .cache)))
            case .stale(let answer, _): return .resume(.success(Answered(answer: answer, source: .stale)))
            case .negative(let failure): return .resume(.failure(failure))
            case .miss: break
            }
            if state.inflight[key] != nil {
                state.inflight[key]!.append(waiter)
                return .wait
            }
            state.inflight[key] = [waiter]
            return .submit
        }
        switch action {
        case .resume(let outcome):
            switch outcome {
            case .success(let answered): stats.metrics?.lookup(answered.source == .stale ? .stale : .hit)
            case .failure(let failure) where failure.kind != .cancelled: stats.metrics?.lookup(.negative)
            case .failure: break
            }
            waiter.continuation.resume(returning: outcome)
        case .submit:
            stats.metrics?.lookup(.miss)
            jobSink.yield([key])
        case .wait:
            stats.metrics?.lookup(.coalesced)
        }
    }

    /// Forgets `name`, or everything when `nil` (admin `/cache` purge, network change). Queries
    /// under way still store their answers; purged keepalive names are resolved again at once,
    /// since they are meant to be always warm.
    public func purge(_ name: String?) {
        let key = name?.cacheKey
        let requery = state.withLockedValue { state -> [String] in
            if let key {
                state.cache.remove(key)
            } else {
                state.cache.removeAll()
            }
            guard state.phase != .stopped else { return [] }
            let purgedKeepalive = key.map { keepalive.contains($0) ? [$0] : [] } ?? keepalive.sorted()
            return purgedKeepalive.filter { key in
                guard state.inflight[key] == nil else { return false }
                state.inflight[key] = []
                return true
            }
        }
        for start in stride(from: 0, to: requery.count, by: configuration.batchSize) {
            jobSink.yield(Array(requery[start..<min(start + configuration.batchSize, requery.count)]))
        }
        reportHitsOfRemovedEntriesIfMany()
        logger.info("purged DNS cache", metadata: ["httpdns.host": "\(key ?? "*")"])
    }

    /// Every live entry, most recently used first (admin `/cache`).
    public func snapshot() -> [CacheEntrySnapshot] {
        let now = clock.now
        return state.withLockedValue { $0.cache.snapshot(now: now) }
    }

    /// A configuration reload: TTL clamps, negative cap, serve-stale age, capacity and the
    /// never-expire mode apply to answers stored from now on; the cached answers stay.
    public func reconfigureCache(_ configuration: DNSCacheConfiguration) {
        state.withLockedValue { $0.cache.reconfigure(configuration) }
    }

    /// Names in the cache now (the `httpdns_proxy_cache_entries` gauge, set when scraped).
    public var entryCount: Int {
        state.withLockedValue { $0.cache.count }
    }

    /// Callers waiting for `name`'s query (tests use it to line up concurrent callers).
    func waiterCount(_ name: String) -> Int {
        state.withLockedValue { $0.inflight[name.cacheKey]?.count ?? 0 }
    }
}

extension CachingResolver where C == ContinuousClock {
    /// `cached(_:)` compiled for the real clock. A caller in another module otherwise runs the
    /// generic body, which looks up the cache's type metadata and calls the clock and its
    /// instants through witness tables on every hit (1.3 % of the DNS listener's CPU at its
    /// maximum rate, in `perf record`); the proxy's requests take this path too.
    public func cached(_ name: String) -> CacheHit? {
        lookUpCached(name)
    }
}

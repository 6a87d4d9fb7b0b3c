import HTTPDNS
import NIOConcurrencyHelpers
import NIOCore
import ProxyConfig
import ProxyKit
import ProxyUpstream

/// Answers the DNS listener's queries: parse, client ACL, per-client rate limit, then the hosts
/// file (its names, every type), the cache (A / AAAA) or the upstream resolvers (everything else). A cache hit is answered synchronously on
/// the caller's event loop; a miss joins the cache's single-flight query.
package final class DNSResponder: Sendable {
    enum Transport: Sendable { case udp, tcp }

    /// What to send back: now (nil: nothing), or when a query or a forward completes.
    enum Reply {
        case now([UInt8]?)
        case later(EventLoopFuture<[UInt8]?>)
    }

    /// An answer served after its TTL ran out carries at most this TTL (RFC 8767 section 4
    /// suggests 30 s), and never more than the answer's own TTL: the stale hit has started the
    /// refresh, so a client asking again one TTL later (a pod's proxy through the DoH listener) gets
    /// the new answer; 30 s would hold every tier below on the old one for 30 s.
    static let staleTTL: UInt32 = 30

    /// The TTL a stale `answer` is served with (at least 1 s).
    static func staleTTL(of answer: ResolvedAnswer) -> UInt32 {
        max(1, min(staleTTL, UInt32(clamping: answer.ttl.components.seconds)))
    }
    /// The port whose per-IP health orders the addresses of an answer (most names are dialled on
    /// it); an IP the health table knows only on other ports is judged on those.
    static let healthPort = 443

    let caching: CachingResolver<ContinuousClock>?
    let routing: DNSRouting
    let forwarder: DNSForwarder
    /// The resolvers of the zones that name their own (`--dns-forward-zone zone=IP:PORT`).
    let zoneUpstreams: [String: [SocketAddress]]
    let health: IPHealthRegistry?
    let allowed: @Sendable () -> [CIDR]
    let limiter: NIOLockedValueBox<DNSRateLimiter<ContinuousClock.Instant>>?
    let metrics: DNSMetrics?
    /// `--negative-ttl`: the cap of the SOA TTL in negative answers.
    let negativeTTLCap: UInt32
    /// `--system-fallback`: a name HTTPDNS cannot answer (other than NXDOMAIN / NODATA) is forwarded.
    let fallback: Bool
    /// Forwarded answers (`ForwardCache`), and the forwards in flight that a repeated question
    /// joins instead of asking the upstream again (by question and transport: a UDP answer may be
    /// truncated where a TCP client needs the whole).
    let forwardCache: NIOLockedValueBox<ForwardCache<ContinuousClock.Instant>>
    /// `dns-query-log`: a JSON line per answer; nil when off.
    let queryLog: DNSQueryLog?
    /// `--hosts-file`: the records the proxy dials too (nil: none).
    let localRecords: LocalRecords?
    private let inFlight = NIOLockedValueBox<[InFlightKey: EventLoopFuture<[UInt8]>]>([:])

    struct InFlightKey: Hashable {
        var key: ForwardCache<ContinuousClock.Instant>.Key
        var tcp: Bool
    }

    init(
        caching: CachingResolver<ContinuousClock>?, routing: DNSRouting, forwarder: DNSForwarder, health: IPHealthRegistry?,
        allowed: @escaping @Sendable () -> [CIDR], rateLimit: Int, metrics: DNSMetrics?, negativeTTLCap: Duration, fallback: Bool,
        forwardCache: ForwardCache<ContinuousClock.Instant>.Limits = .init(), zoneUpstreams: [String: [SocketAddress]] = [:],
        queryLog: DNSQueryLog? = nil, localRecords: LocalRecords? = nil
    ) {
        self.queryLog = queryLog
        self.localRecords = localRecords
        self.zoneUpstreams = zoneUpstreams
        self.forwardCache = NIOLockedValueBox(ForwardCache(limits: forwardCache))
        self.caching = caching
        self.routing = routing
        self.forwarder = forwarder
        self.health = health
        self.allowed = allowed
        self.limiter = rateLimit > 0 ? NIOLockedValueBox(DNSRateLimiter(rate: rateLimit)) : nil
        self.metrics = metrics
        self.negativeTTLCap = UInt32(clamping: negativeTTLCap.components.seconds)
        self.fallback = fallback
    }

    /// Whether `client` is inside the client ACL (clients that are not IP peers are).
    func isAllowed(_ client: SocketAddress?) -> Bool {
        guard let client, let address = IPAddress(client) else { return true }
        let ip = address.unmappedIPv4 ?? address
        return allowed().contains { $0.contains(ip) }
    }

    func respond(_ bytes: [UInt8], from client: SocketAddress?, transport: Transport, on eventLoop: any EventLoop) -> Reply {
        var answer: [UInt8] = []
        return respond(bytes, from: client, transport: transport, on: eventLoop, into: &answer) ?? .now(answer)
    }

    /// `respond`, with a cache hit's answer written into `answer` instead (nil returned), whose
    /// storage a caller answering one query after another reuses: the UDP listener's hot path
    /// allocates no array for it.
    func respond(_ bytes: [UInt8], from client: SocketAddress?, transport: Transport, on eventLoop: any EventLoop, into answer: inout [UInt8]) -> Reply? {
        let asked = Asked(client: client, transport: transport, started: queryLog == nil ? .uptimeNanoseconds(0) : .now())
        let query: DNSQuery
        do {
            query = try DNSQuery.parse(bytes)
        } catch {
            switch error {
            case .drop: return .now(nil)
            case .reply(let rcode, let id, let flags, let question, let edns, _):
                metrics?.answered(type: nil, rcode: rcode)
                return .now(DNSAnswerBuilder.problem(rcode: rcode, id: id, queryFlags: flags, question: question, edns: edns))
            }
        }
        guard isAllowed(client), admit(client) else {
            return .now(finish(query, DNSAnswerBuilder.answer(to: query, rcode: DNSQuery.RCode.refused), .refused, asked))
        }
        let limit = transport == .udp ? query.udpLimit : 65535
        if let localRecords, query.qclass == 1, let name = query.name, let found = localRecords.addresses(of: name) {
            return .now(finish(query, Self.local(query, found, limit: limit), .local, asked))
        }
        switch routing.route(query) {
        case .forward(let zone):
            return forwardReply(query, raw: bytes, asked: asked, zone: zone, on: eventLoop)
        case .cache(let name, let family):
            guard let caching else { return forwardReply(query, raw: bytes, asked: asked, on: eventLoop) }
            if let hit = caching.cached(name) {
                let source: DNSAnswerSource = if case .stale = hit { .stale } else { .cache }
                self.answer(query, hit: hit, family: family, limit: limit, into: &answer)
                _ = finish(query, answer, source, asked)
                return nil
            }
            let promise = eventLoop.makePromise(of: [UInt8]?.self)
            promise.completeWithTask {
                do throws(ResolveFailure) {
                    let (answer, source) = try await caching.resolve(name)
                    let ttl = source == .stale ? Self.staleTTL(of: answer) : UInt32(clamping: answer.ttl.components.seconds)
                    return self.finish(
                        query, self.addresses(query, answer, family: family, ttl: ttl, limit: limit), source == .stale ? .stale : .httpdns, asked)
                } catch let failure {
                    if failure.isCacheable {
                        return self.finish(query, self.negative(query, failure), .httpdns, asked)
                    }
                    if self.fallback {
                        return try await self.forward(query, raw: bytes, asked: asked, on: eventLoop).get()
                    }
                    return self.finish(query, DNSAnswerBuilder.answer(to: query, rcode: DNSQuery.RCode.servFail), .httpdns, asked)
                }
            }
            return .later(promise.futureResult)
        }
    }

    /// The rate limit's verdict for `client` (always yes without a limit or for a non-IP peer).
    private func admit(_ client: SocketAddress?) -> Bool {
        guard let limiter, let client, let address = IPAddress(client) else { return true }
        let now = ContinuousClock.now
        return limiter.withLockedValue { $0.allow(address.unmappedIPv4 ?? address, now: now) }
    }

    private func answer(_ query: DNSQuery, hit: CacheHit, family: DNSRecordType, limit: Int, into out: inout [UInt8]) {
        switch hit {
        case .fresh(let answer, let remaining):
            addresses(query, answer, family: family, ttl: UInt32(clamping: remaining.components.seconds), limit: limit, into: &out)
        case .stale(let answer, _):
            addresses(query, answer, family: family, ttl: Self.staleTTL(of: answer), limit: limit, into: &out)
        case .negative(let failure):
            out = negative(query, failure)
        }
    }

    /// The cached answer's addresses of the asked family, healthiest first; NODATA when it has none.
    func addresses(_ query: DNSQuery, _ answer: ResolvedAnswer, family: DNSRecordType, ttl: UInt32, limit: Int) -> [UInt8] {
        var out: [UInt8] = []
        addresses(query, answer, family: family, ttl: ttl, limit: limit, into: &out)
        return out
    }

    func addresses(_ query: DNSQuery, _ answer: ResolvedAnswer, family: DNSRecordType, ttl: UInt32, limit: Int, into out: inout [UInt8]) {
        var ips = family == .a ? answer.ipv4 : answer.ipv6
        guard !ips.isEmpty else {
            out = DNSAnswerBuilder.answer(to: query, rcode: DNSQuery.RCode.noError, negativeTTL: min(ttl, negativeTTLCap), limit: limit)
            return
        }
        if let health { ips = health.ordered(ips: ips, preferringPort: Self.healthPort) }
        DNSAnswerBuilder.addressAnswer(to: query, type: family.rawValue, ttl: ttl, ips: ips, limit: limit, into: &out)
    }

    /// The hosts file's answer for a name it gives: its addresses of the asked family, NODATA for
    /// a family or type it does not give (as CoreDNS's hosts plugin); authoritative, TTL
    /// `LocalRecords.ttl`.
    static func local(_ query: DNSQuery, _ found: HostsFile.Addresses, limit: Int) -> [UInt8] {
        let ttl = LocalRecords.ttl
        let ips = query.type == DNSRecordType.a.rawValue ? found.ipv4 : query.type == DNSRecordType.aaaa.rawValue ? found.ipv6 : []
        let records = ips.compactMap { ip in DNSAnswerBuilder.addressData(ip).map { DNSAnswerBuilder.Record(type: query.type, ttl: ttl, rdata: $0) } }
        guard !records.isEmpty else {
            return DNSAnswerBuilder.answer(to: query, rcode: DNSQuery.RCode.noError, negativeTTL: ttl, limit: limit, authoritative: true)
        }
        return DNSAnswerBuilder.answer(to: query, rcode: DNSQuery.RCode.noError, records: records, limit: limit, authoritative: true)
    }

    private func negative(_ query: DNSQuery, _ failure: ResolveFailure) -> [UInt8] {
        let ttl = min(failure.negativeTTL.map { UInt32(clamping: $0.components.seconds) } ?? negativeTTLCap, negativeTTLCap)
        let rcode = failure.kind == .nxdomain ? DNSQuery.RCode.nxDomain : DNSQuery.RCode.noError
        return DNSAnswerBuilder.answer(to: query, rcode: rcode, negativeTTL: ttl)
    }

    /// A forwarded question: from the forwarded-answer cache at once when it is fresh there, else
    /// when the upstream answers.
    private func forwardReply(_ query: DNSQuery, raw: [UInt8], asked: Asked, zone: String? = nil, on eventLoop: any EventLoop) -> Reply {
        let transport = asked.transport
        let key = ForwardCache<ContinuousClock.Instant>.Key(query, raw: raw)
        let now = ContinuousClock.now
        if let hit = forwardCache.withLockedValue({ $0.fresh(key, for: query, now: now) }) {
            return .now(finish(query, DNSAnswerBuilder.relay(hit, to: query, limit: Self.limit(query, transport)), .forwardCache, asked))
        }
        return .later(forward(query, raw: raw, key: key, asked: asked, zone: zone, on: eventLoop))
    }

    private func forward(_ query: DNSQuery, raw: [UInt8], asked: Asked, on eventLoop: any EventLoop) -> EventLoopFuture<[UInt8]?> {
        let transport = asked.transport
        let key = ForwardCache<ContinuousClock.Instant>.Key(query, raw: raw)
        if let hit = forwardCache.withLockedValue({ $0.fresh(key, for: query, now: .now) }) {
            return eventLoop.makeSucceededFuture(
                finish(query, DNSAnswerBuilder.relay(hit, to: query, limit: Self.limit(query, transport)), .forwardCache, asked))
        }
        return forward(query, raw: raw, key: key, asked: asked, on: eventLoop)
    }

    /// Asks the upstream (or joins the same question in flight), caches what may be cached, and
    /// answers; when no upstream answers, a stale cached answer (RFC 8767) or SERVFAIL.
    private func forward(
        _ query: DNSQuery, raw: [UInt8], key: ForwardCache<ContinuousClock.Instant>.Key, asked: Asked, zone: String? = nil,
        on eventLoop: any EventLoop
    ) -> EventLoopFuture<[UInt8]?> {
        let transport = asked.transport
        let limit = Self.limit(query, transport)
        let flight = InFlightKey(key: key, tcp: transport == .tcp)
        // Claimed under the lock, started outside it: a forward can fail at once, and its
        // completion takes the lock again.
        let promise = eventLoop.makePromise(of: [UInt8].self)
        let joined: EventLoopFuture<[UInt8]>? = inFlight.withLockedValue { flights in
            if let existing = flights[flight] { return existing }
            flights[flight] = promise.futureResult
            return nil
        }
        let upstream: EventLoopFuture<[UInt8]>
        if let joined {
            upstream = joined.hop(to: eventLoop)
            promise.fail(DNSForwarder.Failure(description: "joined a forward in flight"))  // never handed out
        } else {
            promise.futureResult.whenComplete { result in
                if case .success(let response) = result {
                    self.forwardCache.withLockedValue { _ = $0.store(response, for: key, now: .now) }
                }
                self.inFlight.withLockedValue { $0[flight] = nil }
            }
            forwarder.forward(raw, tcp: transport == .tcp, to: zone.flatMap { zoneUpstreams[$0] }, on: eventLoop).cascade(to: promise)
            upstream = promise.futureResult
        }
        return upstream.map { response -> [UInt8]? in
            // Served from the entry when it was cached: the question in this client's letter case.
            let cached = self.forwardCache.withLockedValue { $0.fresh(key, for: query, now: .now) }
            return self.finish(query, DNSAnswerBuilder.relay(cached ?? response, to: query, limit: limit), .forward, asked)
        }.recover { _ in
            let stale = self.forwardCache.withLockedValue { $0.stale(key, for: query, now: .now, staleTTL: Self.staleTTL) }
            guard let stale else {
                return self.finish(query, DNSAnswerBuilder.answer(to: query, rcode: DNSQuery.RCode.servFail), .forward, asked)
            }
            return self.finish(query, DNSAnswerBuilder.relay(stale, to: query, limit: limit), .forwardStale, asked)
        }
    }

    private static func limit(_ query: DNSQuery, _ transport: Transport) -> Int {
        transport == .udp ? query.udpLimit : 65535
    }

    /// The cached forwarded answers as (name, type, rcode, seconds left), for the admin `/cache`.
    package func forwardedAnswers() -> [(name: String, type: Int, rcode: Int, ttl: Int)] {
        let now = ContinuousClock.now
        return forwardCache.withLockedValue { $0.listing(now: now) }.map { ($0.name, Int($0.type), Int($0.rcode), $0.ttlRemaining) }
    }

    /// Forgets the forwarded answers for `name` (all when nil), as the admin purge does for the
    /// HTTPDNS cache; how many.
    package func purgeForwardedAnswers(_ name: String?) -> Int {
        forwardCache.withLockedValue { $0.purge(name) }
    }

    /// Counts the answer (its type and RCODE), logs it (`dns-query-log`) and hands it back.
    private func finish(_ query: DNSQuery, _ answer: [UInt8], _ source: DNSAnswerSource, _ asked: Asked) -> [UInt8] {
        if let metrics, answer.count >= 4 { metrics.answered(type: query.type, rcode: answer[3] & 0x0F) }
        if let queryLog { queryLog.record(query, answer: answer, source: source, asked: asked) }
        return answer
    }
}

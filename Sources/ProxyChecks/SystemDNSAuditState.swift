import ProxyKit

/// One disagreement between HTTPDNS and the system resolver, as `/audit` lists it.
package struct SystemDNSDisagreement: Sendable, Codable, Equatable {
    package var host: String
    /// `mismatch` or `system_no_answer` (see `AnswerComparison`).
    package var kind: String
    package var httpdns: [String]
    package var system: [String]
    /// The system resolver's error for `system_no_answer`.
    package var systemError: String?
    /// When the system resolver was asked (RFC 3339, UTC).
    package var at: String
}

/// Every decision of the system-DNS audit, without I/O or clock (`now` is passed in): which
/// HTTPDNS answers are checked (at most once per name per TTL, a bounded queue, drops counted),
/// when the next system lookup may run (a token bucket at `rate` a second), and what a comparison
/// records (counters and a ring buffer of recent disagreements).
struct SystemDNSAuditState<Instant: InstantProtocol & Sendable>: Sendable where Instant.Duration == Duration {
    struct Limits: Sendable {
        /// System lookups a second at most (`--compare-rate`).
        var rate: Double
        /// HTTPDNS answers waiting for their comparison; more are dropped and counted.
        var queueCapacity = 256
        /// A name is compared at most once per its answer's TTL, and at most once per this.
        var minInterval: Duration = .seconds(60)
        /// Disagreements `/audit` keeps.
        var recentCapacity = 100
    }

    enum Next: Equatable, Sendable {
        /// Ask the system resolver for `host`; compare with `httpdns`.
        case lookup(host: String, httpdns: [String])
        /// The rate limit allows the next lookup after this long.
        case wait(Duration)
        /// Nothing queued.
        case idle
    }

    private var queue: RecheckQueue<[String], Instant>
    private var bucket: TokenBucket<Instant>
    private(set) var recent: RingBuffer<SystemDNSDisagreement>
    private(set) var comparisons = 0
    private(set) var disagreements = 0

    init(limits: Limits) {
        queue = RecheckQueue(capacity: limits.queueCapacity, minInterval: limits.minInterval)
        bucket = TokenBucket(rate: limits.rate)
        recent = RingBuffer(capacity: limits.recentCapacity)
    }

    var dropped: Int { queue.dropped }
    var queued: Int { queue.count }

    /// A new HTTPDNS answer for `host` (addresses of both families, TTL as served).
    mutating func offer(host: String, addresses: [String], ttl: Duration, now: Instant) -> RecheckQueue<[String], Instant>.Offer {
        guard !addresses.isEmpty else { return .tooSoon }
        return queue.offer(host, job: addresses, interval: ttl, now: now)
    }

    mutating func forgetSchedule() {
        queue.forgetSchedule()
    }

    /// What to do now. A lookup takes a token; a wait takes none (ask again after it).
    mutating func next(now: Instant) -> Next {
        guard queue.count > 0 else { return .idle }
        if let wait = bucket.take(now: now) { return .wait(wait) }
        guard let (host, addresses) = queue.next() else { return .idle }
        return .lookup(host: host, httpdns: addresses)
    }

    /// The system resolver's answer for a `.lookup`: the verdict, and the disagreement recorded.
    mutating func record(host: String, httpdns: [String], system: SystemAnswer, at timestamp: String)
        -> (verdict: AnswerComparison, disagreement: SystemDNSDisagreement?)
    {
        comparisons += 1
        let verdict = AnswerComparison(httpdns: httpdns, system: system)
        guard verdict.isDisagreement else { return (verdict, nil) }
        disagreements += 1
        var systemAddresses: [String] = []
        var systemError: String?
        switch system {
        case .addresses(let addresses): systemAddresses = addresses
        case .failed(let message): systemError = message
        }
        let disagreement = SystemDNSDisagreement(
            host: host, kind: verdict.rawValue, httpdns: httpdns, system: systemAddresses, systemError: systemError,
            at: timestamp
        )
        recent.append(disagreement)
        return (verdict, disagreement)
    }
}

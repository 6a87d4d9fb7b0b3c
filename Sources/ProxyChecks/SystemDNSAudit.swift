import HTTPDNS
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ProxyKit
import ProxyUpstream
import ServiceLifecycle

/// `--compare-system-dns`: asks the system resolver (getaddrinfo) in the background for names
/// HTTPDNS answered, at most `rate` names a second, and records where the answers disagree
/// (`/audit`, the per-domain `/stats` fields, a notice log line, metrics). The decisions are
/// `SystemDNSAuditState`'s; this runs them.
package final class SystemDNSAudit<C: Clock>: BackgroundCheck where C.Duration == Duration, C.Instant: Sendable {
    typealias Lookup = @Sendable (String) async -> SystemAnswer
    typealias State = SystemDNSAuditState<C.Instant>

    private let state: NIOLockedValueBox<State>
    private let worker: BackgroundCheckWorker<C>
    private let lookup: Lookup
    private let stats: ResolverStats?
    private let metrics: BackgroundCheckMetrics?
    private let logger: Logger
    private let disagreementLog = LogRateLimiter(interval: .seconds(10))
    /// The audit's own lookup thread, shut down when the service ends (nil: lookups run elsewhere).
    private let ownedPool: NIOThreadPool?

    init(
        limits: State.Limits, clock: C, lookup: @escaping Lookup, stats: ResolverStats?, metrics: BackgroundCheckMetrics?, logger: Logger,
        ownedPool: NIOThreadPool? = nil
    ) {
        self.ownedPool = ownedPool
        self.state = NIOLockedValueBox(State(limits: limits))
        self.worker = BackgroundCheckWorker(clock: clock)
        self.lookup = lookup
        self.stats = stats
        self.metrics = metrics
        self.logger = logger
    }

    package func networkDidChange() {
        state.withLockedValue { $0.forgetSchedule() }
    }

    package func offer(host: String, answer: ResolvedAnswer) {
        offer(host: host, addresses: answer.ipv4 + answer.ipv6, ttl: answer.ttl)
    }

    func offer(host: String, addresses: [String], ttl: Duration) {
        let now = worker.clock.now
        let outcome = state.withLockedValue { $0.offer(host: host, addresses: addresses, ttl: ttl, now: now) }
        switch outcome {
        case .queued: worker.wakeUp()
        case .dropped: metrics?.auditDropped()
        case .tooSoon: break
        }
    }

    /// Recent disagreements, newest first, and the totals (`/audit`).
    package var report: SystemDNSAuditReport {
        state.withLockedValue { state in
            SystemDNSAuditReport(
                comparisons: state.comparisons, disagreements: state.disagreements, dropped: state.dropped,
                queued: state.queued, recent: state.recent.newestFirst
            )
        }
    }

    package func run() async throws {
        await worker.run { now in
            switch self.state.withLockedValue({ $0.next(now: now) }) {
            case .idle: .idle
            case .wait(let duration): .wait(duration)
            case .lookup(let host, let httpdns): .run((host, httpdns))
            }
        } perform: { (host: String, httpdns: [String]) in
            let system = await self.lookup(host)
            self.record(host: host, httpdns: httpdns, system: system)
        }
        try? await ownedPool?.shutdownGracefully()
    }

    private func record(host: String, httpdns: [String], system: SystemAnswer) {
        let (verdict, disagreement) = state.withLockedValue {
            $0.record(host: host, httpdns: httpdns, system: system, at: Timestamp.iso8601Now())
        }
        metrics?.compared(verdict)
        stats?.recordSystemComparison(host, disagreed: disagreement != nil)
        guard let disagreement else { return }
        disagreementLog.run { suppressed in
            logger.notice(
                "system DNS disagrees with HTTPDNS",
                metadata: [
                    "proxy.host": "\(disagreement.host)", "kind": "\(disagreement.kind)",
                    "httpdns": "\(disagreement.httpdns.joined(separator: ","))",
                    "system": "\(disagreement.systemError ?? disagreement.system.joined(separator: ","))",
                    "suppressed": "\(suppressed)",
                ]
            )
        }
    }
}

extension SystemDNSAudit where C == ContinuousClock {
    /// The audit with getaddrinfo on its own thread and the real clock. Its own thread, not the
    /// shared pool: a slow system resolver (what the audit is there to notice) would otherwise hold
    /// a thread the system-DNS fallback of real requests needs.
    package convenience init(rate: Double, stats: ResolverStats?, metrics: BackgroundCheckMetrics?, logger: Logger) {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        self.init(
            limits: .init(rate: rate), clock: ContinuousClock(),
            lookup: { host in await Self.systemLookup(host, threadPool: pool) },
            stats: stats, metrics: metrics, logger: logger, ownedPool: pool
        )
    }

    static func systemLookup(_ host: String, threadPool: NIOThreadPool) async -> SystemAnswer {
        do {
            let addresses = try await threadPool.runIfActive {
                try SystemResolver.getaddrinfo(host: host, port: 0)
            }
            return .addresses(addresses.compactMap(\.ipAddress))
        } catch let error as SystemResolverError {
            return .failed(error.reason)
        } catch {
            return .failed("\(error)")
        }
    }
}

/// What `/audit` shows.
package struct SystemDNSAuditReport: Sendable, Encodable {
    package var comparisons: Int
    package var disagreements: Int
    /// Answers not compared because the queue was full.
    package var dropped: Int
    /// Answers waiting for their comparison.
    package var queued: Int
    /// Newest first; at most 100.
    package var recent: [SystemDNSDisagreement]
}

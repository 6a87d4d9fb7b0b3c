import Logging
import NIOConcurrencyHelpers
import ProxyConfig
import Testing

@testable import ProxyKit
@testable import ProxyUpstream
@testable import ProxyChecks
@testable import ProxyApp

/// The audit's decisions alone (time is a value passed in, never waited for), then the service
/// with an injected system resolver.
@Suite struct SystemDNSAuditTests {
    private typealias Instant = ContinuousClock.Instant
    private static let t0 = ContinuousClock.now

    // MARK: token bucket

    @Test func theBucketAllowsOneLookupThenOneMorePerIntervalOfItsRate() {
        var bucket = TokenBucket<Instant>(rate: 2)
        #expect(bucket.take(now: Self.t0) == nil)
        // Empty: half a second (1 / rate) until the next token.
        #expect(bucket.take(now: Self.t0) == .milliseconds(500))
        #expect(bucket.take(now: Self.t0 + .milliseconds(250)) == .milliseconds(250))
        #expect(bucket.take(now: Self.t0 + .milliseconds(500)) == nil)
        // A long pause saves up at most `burst` (1) token.
        #expect(bucket.take(now: Self.t0 + .seconds(60)) == nil)
        #expect(bucket.take(now: Self.t0 + .seconds(60)) != nil)
    }

    @Test func aSlowRateWaitsSeconds() {
        var bucket = TokenBucket<Instant>(rate: 0.2)
        #expect(bucket.take(now: Self.t0) == nil)
        #expect(bucket.take(now: Self.t0 + .seconds(1)) == .seconds(4))
        #expect(bucket.take(now: Self.t0 + .seconds(5)) == nil)
    }

    // MARK: recheck queue

    @Test func aNameIsQueuedAtMostOncePerTTLAndAtLeastTheMinimumInterval() {
        var queue = RecheckQueue<Int, Instant>(capacity: 8, minInterval: .seconds(60))
        #expect(queue.offer("a.test", job: 1, interval: .seconds(300), now: Self.t0) == .queued)
        #expect(queue.offer("a.test", job: 2, interval: .seconds(300), now: Self.t0 + .seconds(299)) == .tooSoon)
        #expect(queue.offer("a.test", job: 3, interval: .seconds(300), now: Self.t0 + .seconds(300)) == .queued)
        // A 5 s TTL still waits the minimum interval.
        #expect(queue.offer("b.test", job: 4, interval: .seconds(5), now: Self.t0) == .queued)
        #expect(queue.offer("b.test", job: 5, interval: .seconds(5), now: Self.t0 + .seconds(59)) == .tooSoon)
        #expect(queue.offer("b.test", job: 6, interval: .seconds(5), now: Self.t0 + .seconds(60)) == .queued)
        var order: [Int] = []
        while let next = queue.next() { order.append(next.job) }
        #expect(order == [1, 3, 4, 6])  // first in, first out
    }

    @Test func aFullQueueDropsAndCountsAndTheDroppedNameMayComeBackLater() {
        var queue = RecheckQueue<Int, Instant>(capacity: 2, minInterval: .seconds(60))
        #expect(queue.offer("a", job: 1, interval: .seconds(60), now: Self.t0) == .queued)
        #expect(queue.offer("b", job: 2, interval: .seconds(60), now: Self.t0) == .queued)
        #expect(queue.offer("c", job: 3, interval: .seconds(60), now: Self.t0) == .dropped)
        #expect(queue.dropped == 1)
        #expect(queue.next()?.name == "a")
        // Not remembered as checked: queued as soon as there is room.
        #expect(queue.offer("c", job: 3, interval: .seconds(60), now: Self.t0) == .queued)
    }

    @Test func rememberedNamesAreBoundedAndExpiredOnesMakeRoom() {
        var queue = RecheckQueue<Int, Instant>(capacity: 100, minInterval: .seconds(60), maxNames: 2)
        #expect(queue.offer("a", job: 1, interval: .seconds(60), now: Self.t0) == .queued)
        #expect(queue.offer("b", job: 2, interval: .seconds(120), now: Self.t0) == .queued)
        #expect(queue.offer("c", job: 3, interval: .seconds(60), now: Self.t0 + .seconds(1)) == .dropped)
        // a's interval is over: it is forgotten, c takes its place.
        #expect(queue.offer("c", job: 3, interval: .seconds(60), now: Self.t0 + .seconds(61)) == .queued)
    }

    // MARK: comparison

    @Test func overlappingSetsAgreeDisjointOnesDisagree() {
        #expect(AnswerComparison(httpdns: ["192.0.2.1", "192.0.2.2"], system: .addresses(["192.0.2.2", "192.0.2.9"])) == .agree)
        #expect(AnswerComparison(httpdns: ["192.0.2.1"], system: .addresses(["198.51.100.7"])) == .mismatch)
        // Different spellings of one IPv6 address are the same address.
        #expect(AnswerComparison(httpdns: ["2001:db8::1"], system: .addresses(["2001:DB8:0:0::1"])) == .agree)
    }

    @Test func familiesAreComparedOnlyWhereBothAnswered() {
        // The system's extra ::1 does not matter; the IPv4 sets overlap.
        #expect(AnswerComparison(httpdns: ["127.0.0.1"], system: .addresses(["127.0.0.1", "::1"])) == .agree)
        // IPv4 overlaps, IPv6 does not: a disagreement.
        #expect(AnswerComparison(httpdns: ["192.0.2.1", "2001:db8::1"], system: .addresses(["192.0.2.1", "2001:db8::2"])) == .mismatch)
        #expect(AnswerComparison(httpdns: ["192.0.2.1"], system: .addresses(["2001:db8::2"])) == .noCommonFamily)
    }

    @Test func aSystemFailureIsItsOwnKindOfDisagreement() {
        let verdict = AnswerComparison(httpdns: ["192.0.2.1"], system: .failed("Name or service not known"))
        #expect(verdict == .systemNoAnswer)
        #expect(verdict.isDisagreement)
        #expect(AnswerComparison(httpdns: ["192.0.2.1"], system: .addresses([])) == .systemNoAnswer)
        #expect(!AnswerComparison.noCommonFamily.isDisagreement)
    }

    // MARK: ring buffer

    @Test func theRingBufferKeepsTheNewestNewestFirst() {
        var ring = RingBuffer<Int>(capacity: 3)
        #expect(ring.newestFirst.isEmpty)
        ring.append(1)
        ring.append(2)
        #expect(ring.newestFirst == [2, 1])
        for value in 3...7 { ring.append(value) }
        #expect(ring.newestFirst == [7, 6, 5])
        #expect(ring.appended == 7)
    }

    // MARK: the whole state machine

    @Test func offersAreLookedUpAtTheRateAndDisagreementsRecorded() {
        var state = SystemDNSAuditState<Instant>(limits: .init(rate: 1))
        #expect(state.next(now: Self.t0) == .idle)
        #expect(state.offer(host: "a.test", addresses: ["192.0.2.1"], ttl: .seconds(60), now: Self.t0) == .queued)
        #expect(state.offer(host: "b.test", addresses: ["192.0.2.2"], ttl: .seconds(60), now: Self.t0) == .queued)
        #expect(state.offer(host: "a.test", addresses: ["192.0.2.1"], ttl: .seconds(60), now: Self.t0) == .tooSoon)
        #expect(state.next(now: Self.t0) == .lookup(host: "a.test", httpdns: ["192.0.2.1"]))
        #expect(state.next(now: Self.t0) == .wait(.seconds(1)))
        #expect(state.next(now: Self.t0 + .seconds(1)) == .lookup(host: "b.test", httpdns: ["192.0.2.2"]))
        #expect(state.next(now: Self.t0 + .seconds(1)) == .idle)

        let first = state.record(host: "a.test", httpdns: ["192.0.2.1"], system: .addresses(["203.0.113.5"]), at: "T1")
        #expect(first.verdict == .mismatch)
        #expect(first.disagreement == SystemDNSDisagreement(
            host: "a.test", kind: "mismatch", httpdns: ["192.0.2.1"], system: ["203.0.113.5"], systemError: nil, at: "T1"))
        let second = state.record(host: "b.test", httpdns: ["192.0.2.2"], system: .addresses(["192.0.2.2"]), at: "T2")
        #expect(second.verdict == .agree && second.disagreement == nil)
        let third = state.record(host: "c.test", httpdns: ["192.0.2.3"], system: .failed("Name or service not known"), at: "T3")
        #expect(third.disagreement?.kind == "system_no_answer")
        #expect(third.disagreement?.systemError == "Name or service not known")
        #expect(state.comparisons == 3)
        #expect(state.disagreements == 2)
        #expect(state.recent.newestFirst.map(\.host) == ["c.test", "a.test"])
    }

    @Test func aFullAuditQueueDropsAndCounts() {
        var limits = SystemDNSAuditState<Instant>.Limits(rate: 1)
        limits.queueCapacity = 1
        var state = SystemDNSAuditState<Instant>(limits: limits)
        #expect(state.offer(host: "a.test", addresses: ["192.0.2.1"], ttl: .seconds(60), now: Self.t0) == .queued)
        #expect(state.offer(host: "b.test", addresses: ["192.0.2.2"], ttl: .seconds(60), now: Self.t0) == .dropped)
        #expect(state.dropped == 1)
    }

    @Test func theBackgroundCheckOptionsNeedARestart() {
        let fields: Set<String> = ["compare-system-dns", "compare-rate", "probe-domains"]
        #expect(ProxyServer.reloadableFields.isDisjoint(with: fields))
        for provider in ProviderKind.allCases {
            #expect(ResolverStack.reloadableFields(for: provider).isDisjoint(with: fields), "\(provider)")
        }
        // They are options with fields, so a reload that changes them reports "needs a restart".
        var changed = ProxyConfiguration.defaults
        changed.compareSystemDNS = true
        changed.compareRate = 0.5
        changed.probeDomains = [ProbeTarget(host: "api.test")]
        #expect(Set(changed.differingOptions(from: .defaults)) == fields)
    }

    // MARK: the service

    @Test func theServiceComparesWithTheInjectedResolverAndReportsDisagreements() async throws {
        let asked = NIOLockedValueBox<[String]>([])
        let (done, doneSink) = AsyncStream.makeStream(of: String.self)
        let audit = SystemDNSAudit(
            limits: .init(rate: 1000), clock: ContinuousClock(),
            lookup: { host in
                asked.withLockedValue { $0.append(host) }
                defer { doneSink.yield(host) }
                return host == "hijacked.test" ? .addresses(["10.9.9.9"]) : .addresses(["192.0.2.1"])
            },
            stats: nil, metrics: nil, logger: Logger(label: "test")
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await audit.run() }
            audit.offer(host: "hijacked.test", addresses: ["192.0.2.1"], ttl: .seconds(60))
            audit.offer(host: "honest.test", addresses: ["192.0.2.1"], ttl: .seconds(60))
            var iterator = done.makeAsyncIterator()
            _ = await iterator.next()
            _ = await iterator.next()
            // The report is written after the lookup returns: wait until both are counted.
            while audit.report.comparisons < 2 { await Task.yield() }
            group.cancelAll()
        }
        let report = audit.report
        #expect(asked.withLockedValue { $0 } == ["hijacked.test", "honest.test"])
        #expect(report.comparisons == 2)
        #expect(report.disagreements == 1)
        #expect(report.recent.map(\.host) == ["hijacked.test"])
        #expect(report.recent.first?.system == ["10.9.9.9"])
    }
}

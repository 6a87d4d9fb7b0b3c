import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import ProxyUpstream

/// The health table alone: time is a value passed in, never waited for.
@Suite struct IPHealthTableTests {
    private static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    private let a = UpstreamEndpoint(ip: "192.0.2.1", port: 443)
    private let b = UpstreamEndpoint(ip: "192.0.2.2", port: 443)

    private static func address(_ ip: String, _ port: Int = 443) -> SocketAddress {
        try! SocketAddress(ipAddress: ip, port: port)
    }

    private static func ips(_ addresses: [SocketAddress]) -> [String] {
        addresses.map { $0.ipAddress ?? "?" }
    }

    @Test func backoffDoublesFromThirtySecondsUpToFiveMinutes() {
        let configuration = IPHealthConfiguration()
        let seconds = (1...7).map { IPHealthTable.backoff(after: $0, configuration).nanoseconds / 1_000_000_000 }
        #expect(seconds == [30, 60, 120, 240, 300, 300, 300])
        // A huge failure count neither overflows nor exceeds the ceiling.
        #expect(IPHealthTable.backoff(after: 10_000, configuration) == .minutes(5))
    }

    @Test func aFailureBacksOffUntilItExpiresThenTheEndpointIsRetried() {
        var table = IPHealthTable()
        #expect(table.state(of: a, now: Self.t0) == .healthy)
        table.recordFailure(a, kind: .refused, now: Self.t0)
        #expect(table.state(of: a, now: Self.t0) == .backoff)
        #expect(table.state(of: a, now: Self.t0 + .seconds(29)) == .backoff)
        #expect(table.state(of: a, now: Self.t0 + .seconds(30)) == .retry)
        // A second failure right after the first back-off: 60 s this time.
        table.recordFailure(a, kind: .timeout, now: Self.t0 + .seconds(30))
        #expect(table.state(of: a, now: Self.t0 + .seconds(89)) == .backoff)
        #expect(table.state(of: a, now: Self.t0 + .seconds(90)) == .retry)
        let snapshot = table.snapshot(now: Self.t0 + .seconds(40))
        #expect(snapshot.count == 1)
        #expect(snapshot[0].state == .backoff)
        #expect(snapshot[0].backoffRemainingMs == 50_000)
        #expect(snapshot[0].consecutiveFailures == 2)
        #expect(snapshot[0].failures == 2)
        #expect(snapshot[0].lastFailure == .timeout)
    }

    @Test func aSuccessClearsTheBackoffAndTheStreak() {
        var table = IPHealthTable()
        table.recordFailure(a, kind: .reset, now: Self.t0)
        table.recordFailure(a, kind: .reset, now: Self.t0)
        table.recordSuccess(a, connectTime: .milliseconds(3))
        #expect(table.state(of: a, now: Self.t0) == .healthy)
        // The streak starts again: the next failure backs off 30 s, not 120 s.
        table.recordFailure(a, kind: .reset, now: Self.t0)
        #expect(table.state(of: a, now: Self.t0 + .seconds(30)) == .retry)
        let entry = table.snapshot(now: Self.t0)[0]
        #expect(entry.successes == 1)
        #expect(entry.failures == 3)
        #expect(entry.consecutiveFailures == 1)
    }

    @Test func connectTimeIsAnExponentiallyWeightedMovingAverage() {
        var table = IPHealthTable(configuration: IPHealthConfiguration(smoothing: 0.5))
        #expect(table.connectTime(of: a) == nil)
        table.recordSuccess(a, connectTime: .milliseconds(10))
        #expect(table.connectTime(of: a) == 10)
        table.recordSuccess(a, connectTime: .milliseconds(30))
        #expect(table.connectTime(of: a) == 20)
        table.recordSuccess(a, connectTime: .milliseconds(20))
        #expect(table.connectTime(of: a) == 20)
        // Failures do not feed the average.
        table.recordFailure(a, kind: .timeout, now: Self.t0)
        #expect(table.connectTime(of: a) == 20)
        // The default weight: 0.3 of the new sample.
        var standard = IPHealthTable()
        standard.recordSuccess(b, connectTime: .milliseconds(100))
        standard.recordSuccess(b, connectTime: .milliseconds(200))
        #expect(abs((standard.connectTime(of: b) ?? 0) - 130) < 1e-9)
    }

    @Test func orderIsFastestHealthyThenUnknownThenRetryThenBackoff() {
        var table = IPHealthTable()
        let now = Self.t0 + .seconds(100)
        table.recordSuccess(UpstreamEndpoint(ip: "192.0.2.1", port: 443), connectTime: .milliseconds(40))
        table.recordSuccess(UpstreamEndpoint(ip: "192.0.2.2", port: 443), connectTime: .milliseconds(5))
        table.recordFailure(UpstreamEndpoint(ip: "192.0.2.3", port: 443), kind: .refused, now: now)  // back-off until +30 s
        table.recordFailure(UpstreamEndpoint(ip: "192.0.2.4", port: 443), kind: .refused, now: Self.t0)  // back-off over
        table.recordFailure(UpstreamEndpoint(ip: "192.0.2.6", port: 443), kind: .refused, now: now - .seconds(10))  // until +20 s
        let input = ["192.0.2.3", "192.0.2.6", "192.0.2.4", "192.0.2.5", "192.0.2.1", "192.0.2.7", "192.0.2.2"].map { Self.address($0) }
        #expect(
            Self.ips(table.ordered(input, now: now))
                == ["192.0.2.2", "192.0.2.1", "192.0.2.5", "192.0.2.7", "192.0.2.4", "192.0.2.6", "192.0.2.3"]
        )
    }

    @Test func withoutHistoryTheResolverOrderIsKept() {
        let table = IPHealthTable()
        let input = ["192.0.2.9", "192.0.2.1", "192.0.2.5"].map { Self.address($0) }
        #expect(table.ordered(input, now: Self.t0) == input)
    }

    @Test func healthIsPerPort() {
        var table = IPHealthTable()
        table.recordFailure(UpstreamEndpoint(ip: "192.0.2.1", port: 80), kind: .refused, now: Self.t0)
        let input = [Self.address("192.0.2.1", 443), Self.address("192.0.2.2", 443)]
        #expect(table.ordered(input, now: Self.t0) == input)
        #expect(table.state(of: UpstreamEndpoint(ip: "192.0.2.1", port: 443), now: Self.t0) == .healthy)
    }

    @Test func familiesAlternateStartingWithTheBestAddress() {
        var table = IPHealthTable()
        // IPv4 measured fastest: it leads, then the families alternate (RFC 8305 §4).
        table.recordSuccess(UpstreamEndpoint(ip: "192.0.2.1", port: 443), connectTime: .milliseconds(1))
        let input = ["2001:db8::1", "2001:db8::2", "2001:db8::3", "192.0.2.1", "192.0.2.2"].map { Self.address($0) }
        #expect(
            Self.ips(table.ordered(input, now: Self.t0))
                == ["192.0.2.1", "2001:db8::1", "192.0.2.2", "2001:db8::2", "2001:db8::3"]
        )
        // Endpoints in back-off stay behind every usable one, whatever their family.
        table.recordFailure(UpstreamEndpoint(ip: "2001:db8::1", port: 443), kind: .refused, now: Self.t0)
        #expect(
            Self.ips(table.ordered(input, now: Self.t0))
                == ["192.0.2.1", "2001:db8::2", "192.0.2.2", "2001:db8::3", "2001:db8::1"]
        )
    }

    @Test func duplicatesAreDialedOnce() {
        let table = IPHealthTable()
        let input = ["192.0.2.1", "192.0.2.1", "192.0.2.2"].map { Self.address($0) }
        #expect(Self.ips(table.ordered(input, now: Self.t0)) == ["192.0.2.1", "192.0.2.2"])
    }

    @Test func theLeastRecentlyUsedEndpointIsForgottenAtCapacity() {
        var table = IPHealthTable(configuration: IPHealthConfiguration(capacity: 2))
        table.recordSuccess(a, connectTime: .milliseconds(1))
        table.recordFailure(b, kind: .refused, now: Self.t0)
        table.recordSuccess(a, connectTime: .milliseconds(1))  // a is now the most recent
        let c = UpstreamEndpoint(ip: "192.0.2.3", port: 443)
        table.recordSuccess(c, connectTime: .milliseconds(1))
        #expect(table.count == 2)
        #expect(Set(table.snapshot(now: Self.t0).map(\.ip)) == ["192.0.2.1", "192.0.2.3"])
    }

    @Test func theRegistryUsesItsInjectedClock() {
        let clock = NIOLockedValueBox(Self.t0)
        let registry = IPHealthRegistry(
            configuration: IPHealthConfiguration(backoff: .seconds(10), maxBackoff: .seconds(15)),
            now: { clock.withLockedValue { $0 } }
        )
        registry.recordFailure(a, kind: .refused)
        #expect(registry.state(of: a) == .backoff)
        #expect(Self.ips(registry.ordered([Self.address("192.0.2.1"), Self.address("192.0.2.2")])) == ["192.0.2.2", "192.0.2.1"])
        clock.withLockedValue { $0 = $0 + .seconds(10) }
        #expect(registry.state(of: a) == .retry)
        registry.recordFailure(a, kind: .refused)
        clock.withLockedValue { $0 = $0 + .seconds(14) }
        #expect(registry.state(of: a) == .backoff)  // 15 s (capped), not 20 s
        clock.withLockedValue { $0 = $0 + .seconds(1) }
        #expect(registry.state(of: a) == .retry)
        #expect(registry.snapshot().first?.backoffRemainingMs == nil)
    }
}

import CurlTransport
@testable import HTTPDNS
import Logging
import NIOConcurrencyHelpers
import Testing
import TestSupport

/// Service-IP scheduling: the state machine alone, then the scheduler's loop against the fake v2
/// service with a manual clock (time moves only when a test says so; tests wait on fetch events).
@Suite(.timeLimit(.minutes(1))) struct AlibabaSchedulerTests {
    // MARK: State machine

    @Test func answersReplaceTheBootstrapList() {
        var state = AlibabaSchedulerState(bootstrap: ["b1", "b2"])
        #expect(state.serviceIPs == ["b1", "b2"])
        let (action, change) = state.scheduled(.init(serviceIPs: ["s1"], disabled: false), trigger: .start, unixTime: 10)
        #expect(action == .use(["s1"]))
        #expect(change == .none)
        #expect(state.snapshot == AlibabaSchedulerSnapshot(
            serviceIPs: ["s1"], source: "scheduled", disabled: false, lastTrigger: "start", lastResult: "ok", lastUnixTime: 10))
    }

    @Test func failuresFallBackToBootstrapUnlessAWorkingListIsKept() {
        var state = AlibabaSchedulerState(bootstrap: ["b1"])
        #expect(state.failed("HTTP 500", trigger: .start, unixTime: 1) == .use(["b1"]))
        _ = state.scheduled(.init(serviceIPs: ["s1"], disabled: false), trigger: .start, unixTime: 2)
        // A failed periodic refresh keeps the list that works...
        #expect(state.failed("timeout", trigger: .periodic, unixTime: 3) == .keep)
        #expect(state.serviceIPs == ["s1"])
        #expect(state.snapshot.lastResult == "failed: timeout")
        // ...but after the list failed as a whole, the bootstrap IPs take over.
        #expect(state.failed("timeout", trigger: .rotationFailed, unixTime: 4) == .use(["b1"]))
        #expect(state.snapshot.source == "bootstrap")
    }

    @Test func disableAndEnableAreReportedOnce() {
        var state = AlibabaSchedulerState(bootstrap: ["b1"])
        let first = state.scheduled(.init(serviceIPs: [], disabled: true), trigger: .start, unixTime: 1)
        #expect(first.0 == .keep)
        #expect(first.1 == .disabled)
        #expect(state.disabled)
        #expect(state.scheduled(.init(serviceIPs: [], disabled: true), trigger: .periodic, unixTime: 2).1 == .none)
        #expect(state.scheduled(.init(serviceIPs: ["s1"], disabled: false), trigger: .periodic, unixTime: 3).1 == .enabled)
        #expect(!state.disabled)
    }

    @Test func pendingTriggersCoalesceAndRotationFailureWins() {
        var state = AlibabaSchedulerState(bootstrap: [])
        #expect(state.takePending() == .periodic)
        state.request(.networkChange)
        state.request(.rotationFailed)
        state.request(.networkChange)
        #expect(state.takePending() == .rotationFailed)
        #expect(state.takePending() == .periodic)
    }

    // MARK: The loop against the fake service

    /// A scheduler on `bootstrap` asking `service`, with a manual clock and a stream of fetches.
    struct Harness {
        let clock: ManualClock
        let servers: ResolverServers
        let scheduler: AlibabaServiceScheduler
        let fetches: AsyncStream<AlibabaSchedulerSnapshot>
        /// Whether the host has IPv6 now (asked at every fetch).
        let hostHasIPv6: NIOLockedValueBox<Bool>

        init(
            _ service: FakeAlibabaV2Service, transport: CurlTransport, bootstrap: [String] = ["127.0.0.1"], refresh: Duration = .seconds(3600),
            ipv6: Bool = true
        ) {
            let servers = ResolverServers(ips: bootstrap)
            let (fetches, sink) = AsyncStream.makeStream(of: AlibabaSchedulerSnapshot.self)
            let hostHasIPv6 = NIOLockedValueBox(ipv6)
            self.hostHasIPv6 = hostHasIPv6
            let clock = ManualClock()
            self.clock = clock
            self.servers = servers
            self.fetches = fetches
            // The fetches' timeout is a ceiling no test waits out (dead addresses refuse at once on
            // loopback): generous, since in a parallel run a loaded machine can take seconds to answer.
            scheduler = AlibabaServiceScheduler(
                settings: .init(serviceRoot: "http://localhost:\(service.port)", accountID: "139450", secret: nil, sdkVersion: "test",
                                refreshInterval: refresh, timeout: Self.fetchTimeout, caFile: nil, useIPv6ServiceIPs: { hostHasIPv6.withLockedValue { $0 } }),
                servers: servers,
                transport: transport,
                sleep: { try await clock.sleep(for: $0) },
                unixTime: { 1_700_000_000 },
                logger: Logger(label: "test"),
                observer: { sink.yield($0) }
            )
        }

        static let fetchTimeout = fakeServiceTimeout

        /// Runs the scheduler while `body` runs.
        func running(_ body: (inout AsyncStream<AlibabaSchedulerSnapshot>.Iterator) async throws -> Void) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await scheduler.run() }
                var iterator = fetches.makeAsyncIterator()
                try await body(&iterator)
                group.cancelAll()
            }
        }
    }

    @Test func startFetchThenPeriodicRefresh() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450")
        defer { service.stop() }
        service.setSchedule(.ips(["127.0.0.3", "127.0.0.4"]))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let harness = Harness(service, transport: transport)
        try await harness.running { fetches in
            let first = try #require(await fetches.next())
            #expect(first.lastTrigger == "start")
            #expect(harness.servers.ips == ["127.0.0.3", "127.0.0.4"], "\(first)")
            #expect(harness.scheduler.snapshot.source == "scheduled")

            service.setSchedule(.ips(["127.0.0.5"]))
            await harness.clock.waitForSleeper(until: harness.clock.instant(.seconds(3600)))
            #expect(service.scheduleRequests.count == 1, "nothing before the interval passes")
            harness.clock.advance(by: .seconds(3600))
            let second = try #require(await fetches.next())
            #expect(second.lastTrigger == "periodic")
            #expect(harness.servers.ips == ["127.0.0.5"])
            #expect(service.scheduleRequests.count == 2)
            let request = try #require(service.scheduleRequests.first)
            #expect(request.query["region"] == "global")
            #expect(request.query["platform"] == "linux")
            #expect(request.query["sdk_version"] == "test")
        }
    }

    @Test(arguments: [true, false])
    func ipv6ServiceIPsOnlyWhereThisHostHasIPv6(ipv6: Bool) async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450")
        defer { service.stop() }
        service.setSchedule(.ips(["127.0.0.3", "2001:db8::3"]))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let harness = Harness(service, transport: transport, ipv6: ipv6)
        try await harness.running { fetches in
            _ = try #require(await fetches.next())
            #expect(harness.servers.ips == (ipv6 ? ["127.0.0.3", "2001:db8::3"] : ["127.0.0.3"]))
        }
    }

    @Test func whetherIPv6ServiceIPsAreUsedIsAskedAtEveryFetch() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450")
        defer { service.stop() }
        service.setSchedule(.ips(["127.0.0.3", "2001:db8::3"]))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let harness = Harness(service, transport: transport, refresh: .zero, ipv6: false)
        try await harness.running { fetches in
            _ = try #require(await fetches.next())
            #expect(harness.servers.ips == ["127.0.0.3"])
            // the host joins a network with IPv6; the network change fetches /ss again
            harness.hostHasIPv6.withLockedValue { $0 = true }
            harness.scheduler.requestRefresh(.networkChange)
            _ = try #require(await fetches.next())
            #expect(harness.servers.ips == ["127.0.0.3", "2001:db8::3"])
        }
    }

    @Test func failedSchedulingFallsBackToTheBootstrapIPs() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450")
        defer { service.stop() }
        service.setSchedule(.fail(status: 500))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        // The first bootstrap IP has no listener: both are asked, in order.
        let harness = Harness(service, transport: transport, bootstrap: ["127.0.0.66", "127.0.0.1"])
        try await harness.running { fetches in
            let first = try #require(await fetches.next())
            #expect(first.source == "bootstrap")
            #expect(first.lastResult?.hasPrefix("failed: HTTP 500") == true, "\(first)")
            #expect(harness.servers.ips == ["127.0.0.66", "127.0.0.1"])
            #expect(service.scheduleRequests.count == 1)
        }
    }

    @Test func aFailedRotationFetchesTheScheduleAgain() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450")
        defer { service.stop() }
        service.set("a.test", .init(ipv4: ["127.0.0.9"]))
        // Nothing listens on 127.0.0.67 at the service's port.
        service.setSchedule(.ips(["127.0.0.67"]))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let harness = Harness(service, transport: transport, refresh: .zero)
        let client = ResolverClient(transport: transport, servers: harness.servers, timeout: Harness.fetchTimeout, caFile: nil, logger: Logger(label: "test"))
        let provider = AlibabaV2ProviderTests.provider(service, transport: transport, secret: nil, scheduler: harness.scheduler, client: client)
        try await harness.running { fetches in
            _ = try #require(await fetches.next())
            #expect(harness.servers.ips == ["127.0.0.67"])
            service.setSchedule(.ips(["127.0.0.1"]))
            await #expect(throws: ResolveFailure.self) { try await provider.resolve("a.test", families: .ipv4) }
            let refetch = try #require(await fetches.next())
            #expect(refetch.lastTrigger == "rotation_failed")
            #expect(harness.servers.ips == ["127.0.0.1"])
            // A new set starts without the old set's back-off.
            #expect(try await provider.resolve("a.test", families: .ipv4).ipv4 == ["127.0.0.9"])
        }
    }

    @Test func networkChangeFetchesTheScheduleAgain() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450")
        defer { service.stop() }
        service.setSchedule(.ips(["127.0.0.3"]))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let harness = Harness(service, transport: transport, refresh: .zero)
        let provider = AlibabaV2ProviderTests.provider(service, transport: transport, secret: nil, scheduler: harness.scheduler)
        try await harness.running { fetches in
            _ = try #require(await fetches.next())
            service.setSchedule(.ips(["127.0.0.4"]))
            await provider.networkDidChange()
            // The hook waits for the fetch: the new service IPs are in place when it returns.
            #expect(harness.servers.ips == ["127.0.0.4"])
            let second = try #require(await fetches.next())
            #expect(second.lastTrigger == "network_change")
            #expect(harness.servers.ips == ["127.0.0.4"])
        }
    }

    @Test func disabledServiceIsNotQueriedUntilEnabledAgain() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450")
        defer { service.stop() }
        service.setSchedule(.disabled)
        service.set("a.test", .init(ipv4: ["127.0.0.9"]))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let harness = Harness(service, transport: transport)
        let client = ResolverClient(transport: transport, servers: harness.servers, timeout: Harness.fetchTimeout, caFile: nil, logger: Logger(label: "test"))
        let provider = AlibabaV2ProviderTests.provider(service, transport: transport, secret: nil, scheduler: harness.scheduler, client: client)
        try await harness.running { fetches in
            let first = try #require(await fetches.next())
            #expect(first.disabled)
            do {
                _ = try await provider.resolve("a.test", families: .ipv4)
                Issue.record("a disabled service must not be asked")
            } catch {
                #expect((error as? ResolveFailure)?.message.contains("disable") == true)
            }
            #expect(service.queryRequests.isEmpty)
            // Polling goes on, every 5 minutes while disabled (not the hour of the refresh
            // interval); when scheduling enables the service, queries resume.
            service.setSchedule(.ips(["127.0.0.1"]))
            await harness.clock.waitForSleeper(until: harness.clock.instant(.seconds(300)))
            harness.clock.advance(by: .seconds(300))
            let second = try #require(await fetches.next())
            #expect(!second.disabled)
            #expect(try await provider.resolve("a.test", families: .ipv4).ipv4 == ["127.0.0.9"])
        }
    }

    @Test func whileDisabledScheduleIsAskedAgainEvenWithThePeriodicRefreshOff() async throws {
        let service = try await FakeAlibabaV2Service.start(account: "139450")
        defer { service.stop() }
        service.setSchedule(.disabled)
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let harness = Harness(service, transport: transport, refresh: .zero)
        try await harness.running { fetches in
            #expect(try #require(await fetches.next()).disabled)
            await harness.clock.waitForSleeper(until: harness.clock.instant(.seconds(300)))
            harness.clock.advance(by: .seconds(300))
            let second = try #require(await fetches.next())
            #expect(second.lastTrigger == "periodic")
            #expect(service.scheduleRequests.count == 2)
        }
    }
}

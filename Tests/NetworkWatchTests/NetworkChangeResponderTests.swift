import HTTPDNS
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ProxyConfig
import Testing

@testable import ProxyUpstream
@testable import NetworkWatch
@testable import ProxyApp

/// A network change resets per-IP health, retires pooled connections, tells the provider, and
/// refreshes cached names in the background while the old answers are still served.
@Suite(.timeLimit(.minutes(1))) struct NetworkChangeResponderTests {
    /// A provider that counts queries and `networkDidChange` calls; its queries can be held.
    final class CountingProvider: HTTPDNSProvider {
        struct State {
            var answers: [String: String] = [:]
            var queries: [String] = []
            var networkChanges = 0
            var held: [CheckedContinuation<Void, Never>] = []
            var holding = false
        }

        let state = NIOLockedValueBox(State())
        var name: String { "counting" }

        func resolve(_ host: String, families: AddressFamilies) async throws(ResolveFailure) -> ResolvedAnswer {
            await withCheckedContinuation { continuation in
                let hold = state.withLockedValue { state -> Bool in
                    state.queries.append(host)
                    if state.holding { state.held.append(continuation) }
                    return state.holding
                }
                if !hold { continuation.resume() }
            }
            let ip = state.withLockedValue { $0.answers[host] } ?? "192.0.2.1"
            return ResolvedAnswer(ipv4: [ip], ipv6: [], ttl: .seconds(300), serverIP: "127.0.0.1")
        }

        func networkDidChange() async {
            state.withLockedValue { $0.networkChanges += 1 }
        }

        func hold() { state.withLockedValue { $0.holding = true } }

        func release() {
            let held = state.withLockedValue { state in
                state.holding = false
                defer { state.held.removeAll() }
                return state.held
            }
            held.forEach { $0.resume() }
        }

        var queries: [String] { state.withLockedValue { $0.queries } }
    }

    @Test func aChangeResetsHealthRetiresThePoolAndRefreshesWithoutWiping() async throws {
        let provider = CountingProvider()
        provider.state.withLockedValue { $0.answers["origin.test"] = "192.0.2.10" }
        let caching = CachingResolver(
            configuration: .init(), clock: ContinuousClock(),
            query: { host in try await provider.resolve(host, families: .ipv4) },
            stats: ResolverStats(), logger: Logger(label: "test")
        )
        let health = IPHealthRegistry()
        let retired = NIOLockedValueBox<[String?]>([])
        let responder = NetworkChangeResponder(
            resetHealth: { health.reset() },
            retirePooled: {
                retired.withLockedValue { $0.append(nil) }
                return 2
            },
            resolver: { .init(refreshing: await ResolverStack.networkDidChange(provider: provider, caching: caching)) },
            logger: Logger(label: "test")
        )

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await caching.run() }
            let first = try await caching.resolve("origin.test")
            #expect(first.answer.ipv4 == ["192.0.2.10"])
            health.recordFailure(UpstreamEndpoint(ip: "192.0.2.10", port: 443), kind: .timeout)
            #expect(health.state(of: UpstreamEndpoint(ip: "192.0.2.10", port: 443)) == .backoff)

            // The new network's service answers differently; hold its answer to look in between.
            provider.state.withLockedValue { $0.answers["origin.test"] = "198.51.100.10" }
            provider.hold()
            await responder.respond(to: NetworkChange(old: NetworkChangeStateMachineTests.home, new: NetworkChangeStateMachineTests.office))

            #expect(health.snapshot().isEmpty, "per-IP health forgotten")
            #expect(retired.withLockedValue { $0.count } == 1, "pooled connections retired once")
            #expect(provider.state.withLockedValue { $0.networkChanges } == 1, "provider told")
            await waitFor("the refresh query") { provider.queries.count == 2 }
            // While the refresh is out, the old answer is served from the cache: nothing was wiped.
            let during = try await caching.resolve("origin.test")
            #expect(during.source == .cache)
            #expect(during.answer.ipv4 == ["192.0.2.10"])
            provider.release()
            await waitFor("the refreshed answer") { caching.snapshot().first?.ipv4 == ["198.51.100.10"] }
            let after = try await caching.resolve("origin.test")
            #expect(after.source == .cache && after.answer.ipv4 == ["198.51.100.10"])
            tasks.cancelAll()
        }
        #expect(provider.queries == ["origin.test", "origin.test"], "one query per cached name, no more")
    }

    /// `--network-monitor` is set up at start: a reload reports it as needing a restart.
    @Test func theOptionNeedsARestart() {
        var changed = ProxyConfiguration.defaults
        changed.networkMonitor = false
        #expect(ProxyConfiguration.defaults.networkMonitor)
        #expect(changed.differingOptions(from: .defaults) == ["network-monitor"])
        let live = ProxyServer.reloadableFields.union(ResolverStack.reloadableFields(for: .json))
        #expect(!live.contains("network-monitor"))
    }
}

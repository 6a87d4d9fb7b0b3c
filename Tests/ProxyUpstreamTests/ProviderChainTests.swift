import HTTPDNS
import Logging
import NIOConcurrencyHelpers
@testable import ProxyUpstream
import Testing

/// `fallback-provider`: the chain's state and the provider that follows it.
@Suite struct ProviderChainTests {
    @Test func theFirstIsSkippedForTheRetryTimeAfterAFailure() {
        let start = ContinuousClock.now
        var state = ProviderChainState<ContinuousClock.Instant>(retryAfter: .seconds(3))
        #expect(state.usesFirst(now: start))
        state.firstFailed(now: start)
        #expect(!state.usesFirst(now: start + .seconds(1)))
        #expect(state.usesFirst(now: start + .seconds(3)))
        state.firstFailed(now: start + .seconds(3))
        #expect(!state.usesFirst(now: start + .seconds(5)))
        state.firstAnswered()
        #expect(state.usesFirst(now: start + .seconds(5)))
    }

    final class Scripted: HTTPDNSProvider {
        let name: String
        let outcome: NIOLockedValueBox<Result<ResolvedAnswer, ResolveFailure>>
        let calls = NIOLockedValueBox(0)
        init(_ name: String, _ outcome: Result<ResolvedAnswer, ResolveFailure>) {
            self.name = name
            self.outcome = NIOLockedValueBox(outcome)
        }
        func resolve(_ host: String, families: AddressFamilies) async throws(ResolveFailure) -> ResolvedAnswer {
            calls.withLockedValue { $0 += 1 }
            return try outcome.withLockedValue { $0 }.get()
        }
    }

    @Test func theSecondAnswersWhileTheFirstIsDownAndNXDOMAINIsAnAnswer() async throws {
        let node = Scripted("doh", .failure(ResolveFailure(kind: .network, message: "connection refused")))
        let vendor = Scripted("json", .success(ResolvedAnswer(ipv4: ["192.0.2.1"], ipv6: [], ttl: .seconds(60))))
        // A retry time of zero: the first is asked every time, so its recovery is seen at once.
        let chain = ChainedProvider(first: node, second: vendor, retryAfter: .zero, logger: Logger(label: "test"))
        #expect(try await chain.resolve("a.test", families: .ipv4).ipv4 == ["192.0.2.1"])
        #expect(chain.isOnSecond)
        node.outcome.withLockedValue { $0 = .success(ResolvedAnswer(ipv4: ["192.0.2.9"], ipv6: [], ttl: .seconds(60))) }
        #expect(try await chain.resolve("a.test", families: .ipv4).ipv4 == ["192.0.2.9"])
        #expect(!chain.isOnSecond)
        node.outcome.withLockedValue { $0 = .failure(ResolveFailure(kind: .nxdomain, message: "no such name")) }
        await #expect(throws: ResolveFailure.self) { try await chain.resolve("gone.test", families: .ipv4) }
        #expect(vendor.calls.withLockedValue { $0 } == 1, "NXDOMAIN from the first is final")
        #expect(!chain.isOnSecond)
    }

    @Test func whileTheFirstIsSkippedOnlyTheSecondIsAsked() async throws {
        let node = Scripted("doh", .failure(ResolveFailure(kind: .timeout, message: "timed out")))
        let vendor = Scripted("json", .success(ResolvedAnswer(ipv4: ["192.0.2.1"], ipv6: [], ttl: .seconds(60))))
        let chain = ChainedProvider(first: node, second: vendor, retryAfter: .seconds(3600), logger: Logger(label: "test"))
        for _ in 0..<5 { _ = try await chain.resolve("a.test", families: .ipv4) }
        #expect(node.calls.withLockedValue { $0 } == 1)
        #expect(vendor.calls.withLockedValue { $0 } == 5)
    }
}

import HTTPDNS
import Logging
import NIOConcurrencyHelpers
import ProxyKit

/// When to ask the first provider of a chain: always, except for `retryAfter` after it failed
/// (a node tier that is down is then not waited for on every query). A value type without a
/// clock: every call takes `now`.
struct ProviderChainState<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration, Instant: Sendable {
    let retryAfter: Duration
    private(set) var failedAt: Instant?

    init(retryAfter: Duration) {
        self.retryAfter = retryAfter
    }

    func usesFirst(now: Instant) -> Bool {
        guard let failedAt else { return true }
        return failedAt.duration(to: now) >= retryAfter
    }

    /// The first provider answered (NXDOMAIN and NODATA are answers too).
    mutating func firstAnswered() { failedAt = nil }

    mutating func firstFailed(now: Instant) { failedAt = now }
}

/// `provider` then `fallback-provider`: the second is asked when the first fails for any reason but
/// NXDOMAIN/NODATA, and for `retryAfter` after such a failure; then the first again.
final class ChainedProvider: HTTPDNSProvider {
    let first: any HTTPDNSProvider
    let second: any HTTPDNSProvider
    private let state: NIOLockedValueBox<ProviderChainState<ContinuousClock.Instant>>
    private let logger: Logger

    init(first: any HTTPDNSProvider, second: any HTTPDNSProvider, retryAfter: Duration, logger: Logger) {
        self.first = first
        self.second = second
        self.state = NIOLockedValueBox(ProviderChainState(retryAfter: retryAfter))
        self.logger = logger
    }

    var name: String { first.name }

    /// Whether the last answer came from the second provider (for tests and logs).
    var isOnSecond: Bool { state.withLockedValue { $0.failedAt != nil } }

    func resolve(_ host: String, families: AddressFamilies) async throws(ResolveFailure) -> ResolvedAnswer {
        if state.withLockedValue({ $0.usesFirst(now: .now) }) {
            do throws(ResolveFailure) {
                let answer = try await first.resolve(host, families: families)
                markFirstAnswered()
                return answer
            } catch where error.isCacheable {
                markFirstAnswered()
                throw error
            } catch {
                let wasUp = state.withLockedValue { state -> Bool in
                    defer { state.firstFailed(now: .now) }
                    return state.failedAt == nil
                }
                if wasUp {
                    logger.warning(
                        "the first provider failed; asking the fallback provider",
                        metadata: ["provider": "\(first.name)", "fallback": "\(second.name)", "error": "\(error.shortDescription)"])
                }
            }
        }
        return try await second.resolve(host, families: families)
    }

    private func markFirstAnswered() {
        let wasDown = state.withLockedValue { state -> Bool in
            defer { state.firstAnswered() }
            return state.failedAt != nil
        }
        if wasDown { logger.notice("the first provider answers again", metadata: ["provider": "\(first.name)"]) }
    }

    func networkDidChange() async {
        await first.networkDidChange()
        await second.networkDidChange()
    }
}

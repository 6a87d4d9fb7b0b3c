#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Testing

@testable import HTTPDNS

/// A `CachingResolver` on a manual clock in front of a `FakeUpstream`.
struct ResolverHarness {
    let clock = ManualClock()
    let upstream: FakeUpstream
    let stats: ResolverStats
    let resolver: CachingResolver<ManualClock>
    let logs: RecordingLogHandler.Store

    init(
        _ configuration: CachingResolverConfiguration = .init(),
        upstream: FakeUpstream = FakeUpstream(),
        batch: Bool = false,
        stats: ResolverStats = ResolverStats(),
        wallClock: @escaping @Sendable () -> Date = { Date(timeIntervalSince1970: 1_700_000_000) }
    ) {
        self.upstream = upstream
        self.stats = stats
        let (logger, logs) = RecordingLogHandler.logger()
        self.logs = logs
        self.resolver = CachingResolver(
            configuration: configuration, clock: clock, query: upstream.query,
            batchQuery: batch ? upstream.batchQuery : nil, stats: stats, logger: logger, wallClock: wallClock
        )
    }

    /// Runs the resolver's `run()` while `body` executes, then cancels it and waits for it to stop.
    func running<R>(_ body: () async throws -> R) async throws -> R {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await resolver.run() }
            do {
                let result = try await body()
                group.cancelAll()
                try await group.waitForAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }
}

/// Waits for background work to reach a state without sleeping: yields to the other tasks until
/// `condition` holds, failing the test if it never does.
func yieldUntil(
    _ what: Comment, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool
) async {
    for _ in 0..<100_000 {
        if condition() { return }
        await Task.yield()
    }
    Issue.record("timed out waiting: \(what)", sourceLocation: sourceLocation)
}

func answer(_ ipv4: String, ttl: Duration) -> ResolvedAnswer {
    ResolvedAnswer(ipv4: [ipv4], ipv6: [], ttl: ttl, serverIP: "203.0.113.1")
}

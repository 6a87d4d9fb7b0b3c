import NIOConcurrencyHelpers
import NIOCore

/// The process-wide `IPHealthTable` behind a lock, shared by every connection and event loop. The
/// clock is injected (`now`) so tests can move time by hand.
package final class IPHealthRegistry: Sendable {
    private let table: NIOLockedValueBox<IPHealthTable>
    let now: @Sendable () -> NIODeadline

    package init(configuration: IPHealthConfiguration = .init(), now: @escaping @Sendable () -> NIODeadline = { .now() }) {
        self.table = NIOLockedValueBox(IPHealthTable(configuration: configuration))
        self.now = now
    }

    package var configuration: IPHealthConfiguration { table.withLockedValue { $0.configuration } }

    package func recordSuccess(_ endpoint: UpstreamEndpoint, connectTime: TimeAmount) {
        table.withLockedValue { $0.recordSuccess(endpoint, connectTime: connectTime) }
    }

    package func recordFailure(_ endpoint: UpstreamEndpoint, kind: UpstreamFailureKind) {
        let now = self.now()
        table.withLockedValue { $0.recordFailure(endpoint, kind: kind, now: now) }
    }

    /// Records a failure for `address` when it is an IP address (no-op otherwise).
    func recordFailure(_ address: SocketAddress, kind: UpstreamFailureKind) {
        guard let endpoint = UpstreamEndpoint(address) else { return }
        recordFailure(endpoint, kind: kind)
    }

    package func ordered(_ addresses: [SocketAddress]) -> [SocketAddress] {
        let now = self.now()
        return table.withLockedValue { $0.ordered(addresses, now: now) }
    }

    /// `ips` (one family) healthiest first, judged on `preferredPort` or, for an IP the table knows
    /// only on other ports, on the best of those (`IPHealthTable.ordered(ips:preferringPort:now:)`):
    /// what the DNS listener answers with, so a dead address goes last. Unchanged while nothing
    /// has been learned.
    package func ordered(ips: [String], preferringPort preferredPort: Int) -> [String] {
        guard ips.count > 1 else { return ips }
        let now = self.now()
        return table.withLockedValue { table in
            table.count == 0 ? ips : table.ordered(ips: ips, preferringPort: preferredPort, now: now)
        }
    }

    package func state(of endpoint: UpstreamEndpoint) -> IPHealthTable.State {
        let now = self.now()
        return table.withLockedValue { $0.state(of: endpoint, now: now) }
    }

    /// Forgets every endpoint (the host's network changed: what was learned no longer holds).
    package func reset() {
        table.withLockedValue { $0.reset() }
    }

    package func snapshot() -> [IPHealthSnapshot] {
        let now = self.now()
        return table.withLockedValue { $0.snapshot(now: now) }
    }
}

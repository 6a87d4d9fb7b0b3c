import NIOConcurrencyHelpers
import NIOCore

/// The process-wide `IPHealthTable` behind a lock, shared by every connection and event loop. The
/// clock is injected (`now`) so tests can move time by hand.
public final class IPHealthRegistry: Sendable {
    private let table: NIOLockedValueBox<IPHealthTable>
    let now: @Sendable () -> NIODeadline

    public init(configuration: IPHealthConfiguration = .init(), now: @escaping @Sendable () -> NIODeadline = { .now() }) {
        self.table = NIOLockedValueBox(IPHealthTable(configuration: configuration))
        self.now = now
    }

    public var configuration: IPHealthConfiguration { table.withLockedValue { $0.configuration } }

    public func recordSuccess(_ endpoint: UpstreamEndpoint, connectTime: TimeAmount) {
        table.withLockedValue { $0.recordSuccess(endpoint, connectTime: connectTime) }
    }

    public func recordFailure(_ endpoint: UpstreamEndpoint, kind: UpstreamFailureKind) {
        let now = self.now()
        table.withLockedValue { $0.recordFailure(endpoint, kind: kind, now: now) }
    }

    /// Records a failure for `address` when it is an IP address (no-op otherwise).
    func recordFailure(_ address: SocketAddress, kind: UpstreamFailureKind) {
        guard let endpoint = UpstreamEndpoint(address) else { return }
        recordFailure(endpoint, kind: kind)
    }

    public func ordered(_ addresses: [SocketAddress]) -> [SocketAddress] {
        let now = self.now()
        return table.withLockedValue { $0.ordered(addresses, now: now) }
    }

    /// `ips` (one family) in the order `ordered` would dial them on `port`: what the DNS listener
    /// answers with, so a dead address goes last. Unchanged while nothing has been learned.
    public func ordered(ips: [String], port: Int) -> [String] {
        guard ips.count > 1, table.withLockedValue({ $0.count > 0 }) else { return ips }
        let addresses = ips.compactMap { try? SocketAddress(ipAddress: $0, port: port) }
        return ordered(addresses).compactMap(\.ipAddress)
    }

    public func state(of endpoint: UpstreamEndpoint) -> IPHealthTable.State {
        let now = self.now()
        return table.withLockedValue { $0.state(of: endpoint, now: now) }
    }

    /// Forgets every endpoint (the host's network changed: what was learned no longer holds).
    public func reset() {
        table.withLockedValue { $0.reset() }
    }

    public func snapshot() -> [IPHealthSnapshot] {
        let now = self.now()
        return table.withLockedValue { $0.snapshot(now: now) }
    }
}

import ProxyKit

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

/// What the network monitor has seen (admin `/stats` → `network`).
package struct NetworkChangeStats: Sendable, Codable, Equatable {
    /// `netlink`, `polling` (netlink unavailable: interface addresses read every 10 s), `off`
    /// (`--network-monitor false`), or `starting`.
    package var monitor: String
    /// Real changes seen since start.
    package var changes: Int
    /// When the last one was seen (ISO 8601, UTC); nil before the first.
    package var lastChange: String?
    /// The addresses counted now: IPv4 addresses and IPv6 /64 prefixes (see `InterfaceAddresses`).
    package var ipv4Addresses: Int
    package var ipv6Prefixes: Int
}

/// The monitor's counters, shared with the admin listener; also feeds the metric.
package final class NetworkChangeRecorder: Sendable {
    private let stats: NIOLockedValueBox<NetworkChangeStats>
    private let metrics: ProxyMetrics?
    private let wallClock: @Sendable () -> Date

    package init(monitor: String = "starting", metrics: ProxyMetrics? = nil, wallClock: @escaping @Sendable () -> Date = { Date() }) {
        self.stats = NIOLockedValueBox(NetworkChangeStats(monitor: monitor, changes: 0, lastChange: nil, ipv4Addresses: 0, ipv6Prefixes: 0))
        self.metrics = metrics
        self.wallClock = wallClock
    }

    package var snapshot: NetworkChangeStats { stats.withLockedValue { $0 } }

    func started(mode: String, addresses: InterfaceAddresses) {
        stats.withLockedValue {
            $0.monitor = mode
            $0.ipv4Addresses = addresses.ipv4Count
            $0.ipv6Prefixes = addresses.ipv6Count
        }
    }

    func mode(_ mode: String) {
        stats.withLockedValue { $0.monitor = mode }
    }

    func changed(_ change: NetworkChange) {
        let when = wallClock().formatted(.iso8601)
        stats.withLockedValue {
            $0.changes += 1
            $0.lastChange = when
            $0.ipv4Addresses = change.new.ipv4Count
            $0.ipv6Prefixes = change.new.ipv6Count
        }
        metrics?.networkChanged()
    }
}

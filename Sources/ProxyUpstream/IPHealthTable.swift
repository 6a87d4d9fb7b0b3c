import NIOCore
import ProxyConfig
import ProxyKit

/// One upstream endpoint (IP and port) as the health table knows it. Keyed by port too: a refused
/// port 80 says nothing about port 443 on the same machine.
package struct UpstreamEndpoint: Hashable, Sendable, CustomStringConvertible {
    package var ip: String
    package var port: Int

    package init(ip: String, port: Int) {
        self.ip = ip
        self.port = port
    }

    package init?(_ address: SocketAddress) {
        guard let ip = address.ipAddress, let port = address.port else { return nil }
        self.init(ip: ip, port: port)
    }

    package var description: String { ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)" }
}

/// Why an endpoint counted as failing (a bounded label).
package enum UpstreamFailureKind: String, Sendable, Codable {
    case refused
    case timeout
    case reset
    case unreachable
    case tls
    /// Connected, then closed before any response byte.
    case closed
    case other
}

/// Limits of the health table; defaults documented here.
package struct IPHealthConfiguration: Sendable, Equatable {
    /// Back-off after the first failure; doubled on each further consecutive failure. Default 30 s.
    package var backoff: TimeAmount
    /// Ceiling of the back-off. Default 5 min.
    package var maxBackoff: TimeAmount
    /// Endpoints remembered; the least recently used is forgotten beyond this. Default 4096.
    package var capacity: Int
    /// Weight of a new connect-time sample in the moving average (0...1). Default 0.3.
    package var smoothing: Double

    package init(backoff: TimeAmount = .seconds(30), maxBackoff: TimeAmount = .minutes(5), capacity: Int = 4096, smoothing: Double = 0.3) {
        self.backoff = backoff
        self.maxBackoff = max(maxBackoff, backoff)
        self.capacity = max(1, capacity)
        self.smoothing = min(1, max(0.01, smoothing))
    }
}

extension IPHealthConfiguration {
    /// `ip-backoff` and `ip-backoff-max`; the rest at their defaults.
    package init(_ configuration: ProxyConfiguration) {
        self.init(backoff: configuration.ipBackoff, maxBackoff: configuration.ipBackoffMax)
    }
}

/// Per-endpoint health learned from real connections: back-off after failures, connect time as an
/// exponentially weighted moving average. A value type without I/O or clock: every call takes
/// `now`, so tests drive time by hand. `IPHealthRegistry` shares one behind a lock.
package struct IPHealthTable: Sendable {
    package enum State: String, Sendable, Codable {
        /// No failure since the last success (or never failed).
        case healthy
        /// Failed; skipped (ordered last) until the back-off ends.
        case backoff
        /// The back-off is over but no connect has succeeded since: tried again, after the healthy ones.
        case retry
    }

    struct Entry: Sendable {
        var consecutiveFailures = 0
        var backoffUntil: NIODeadline?
        var connectEWMA: Double?
        var successes = 0
        var failures = 0
        var lastFailure: UpstreamFailureKind?
        var lastUsed: UInt64 = 0
    }

    package let configuration: IPHealthConfiguration
    private(set) var entries: [UpstreamEndpoint: Entry] = [:]
    /// The ports `entries` holds for each IP (kept with it), so a question about an IP whatever
    /// the port costs a lookup, not a scan of the table.
    private(set) var portsByIP: [String: [Int]] = [:]
    private var clock: UInt64 = 0

    package init(configuration: IPHealthConfiguration = .init()) {
        self.configuration = configuration
    }

    package var count: Int { entries.count }

    // MARK: learning

    /// A connection was established in `connectTime`: clears any back-off, feeds the average.
    package mutating func recordSuccess(_ endpoint: UpstreamEndpoint, connectTime: TimeAmount) {
        let configuration = self.configuration
        touch(endpoint) { entry in
            let sample = Double(connectTime.nanoseconds) / 1_000_000
            if let average = entry.connectEWMA {
                entry.connectEWMA = average + configuration.smoothing * (sample - average)
            } else {
                entry.connectEWMA = sample
            }
            entry.successes += 1
            entry.consecutiveFailures = 0
            entry.backoffUntil = nil
        }
    }

    /// A connect was refused, timed out or reset, a TLS handshake failed, or the origin closed before
    /// answering: back off for `backoff` × 2^(consecutive failures − 1), at most `maxBackoff`.
    package mutating func recordFailure(_ endpoint: UpstreamEndpoint, kind: UpstreamFailureKind, now: NIODeadline) {
        let configuration = self.configuration
        touch(endpoint) { entry in
            entry.failures += 1
            entry.consecutiveFailures += 1
            entry.lastFailure = kind
            entry.backoffUntil = now + Self.backoff(after: entry.consecutiveFailures, configuration)
        }
    }

    static func backoff(after failures: Int, _ configuration: IPHealthConfiguration) -> TimeAmount {
        let maximum = configuration.maxBackoff.nanoseconds
        var value = configuration.backoff.nanoseconds
        var step = 1
        while step < failures && value < maximum {
            value = value > maximum / 2 ? maximum : value * 2
            step += 1
        }
        return .nanoseconds(min(value, maximum))
    }

    private mutating func touch(_ endpoint: UpstreamEndpoint, _ update: (inout Entry) -> Void) {
        clock &+= 1
        if entries[endpoint] == nil {
            if entries.count >= configuration.capacity { evictLeastRecentlyUsed() }
            portsByIP[endpoint.ip, default: []].append(endpoint.port)
        }
        var entry = entries[endpoint] ?? Entry()
        update(&entry)
        entry.lastUsed = clock
        entries[endpoint] = entry
    }

    /// Forgets every endpoint: back-offs and connect times alike.
    package mutating func reset() {
        entries.removeAll()
        portsByIP.removeAll()
    }

    private mutating func evictLeastRecentlyUsed() {
        guard let oldest = entries.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key else { return }
        entries[oldest] = nil
        portsByIP[oldest.ip]?.removeAll { $0 == oldest.port }
        if portsByIP[oldest.ip]?.isEmpty == true { portsByIP[oldest.ip] = nil }
    }

    // MARK: reading

    package func state(of endpoint: UpstreamEndpoint, now: NIODeadline) -> State {
        guard let entry = entries[endpoint] else { return .healthy }
        return Self.state(entry, now: now)
    }

    static func state(_ entry: Entry, now: NIODeadline) -> State {
        if let until = entry.backoffUntil, until > now { return .backoff }
        return entry.consecutiveFailures > 0 ? .retry : .healthy
    }

    /// Milliseconds, the moving average of successful connects; nil before the first one.
    package func connectTime(of endpoint: UpstreamEndpoint) -> Double? {
        entries[endpoint]?.connectEWMA
    }

    /// Every remembered endpoint, for the admin endpoint.
    package func snapshot(now: NIODeadline) -> [IPHealthSnapshot] {
        entries.map { endpoint, entry in
            let state = Self.state(entry, now: now)
            let remaining = state == .backoff ? entry.backoffUntil.map { ($0 - now).nanoseconds / 1_000_000 } : nil
            return IPHealthSnapshot(
                ip: endpoint.ip,
                port: endpoint.port,
                state: state,
                backoffRemainingMs: remaining.map(Int.init),
                consecutiveFailures: entry.consecutiveFailures,
                connectMsEWMA: entry.connectEWMA.map { ($0 * 1000).rounded() / 1000 },
                successes: entry.successes,
                failures: entry.failures,
                lastFailure: entry.lastFailure
            )
        }.sorted { ($0.ip, $0.port) < ($1.ip, $1.port) }
    }
}

/// One endpoint as `/health/ips` shows it.
package struct IPHealthSnapshot: Sendable, Codable, Equatable {
    package var ip: String
    package var port: Int
    package var state: IPHealthTable.State
    /// While in back-off: how long until the endpoint is tried again in normal order.
    package var backoffRemainingMs: Int?
    package var consecutiveFailures: Int
    /// Moving average of connect times (ms); nil before the first successful connect.
    package var connectMsEWMA: Double?
    package var successes: Int
    package var failures: Int
    package var lastFailure: UpstreamFailureKind?
}

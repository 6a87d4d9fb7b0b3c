import NIOConcurrencyHelpers

/// The bootstrap IPs of one resolver service and which of them to try first. A server that fails
/// (connection error, timeout, 5xx, ServiceLevelDeny) moves the rotation on; when a whole rotation
/// fails, queries stop waiting on the service: they fail at once (the caller falls back to system
/// DNS) and only one probe per `backoff` period goes out until the service answers again, as the
/// vendor SDKs do instead of hammering a dead service. The set can be replaced while queries run
/// (Alibaba's service-IP scheduling): a new set starts a fresh rotation without back-off.
public final class ResolverServers: Sendable {
    public enum Admission: Sendable, Equatable {
        /// Query now, trying the IPs in this order.
        case go([String])
        /// The service is backing off: don't wait on it.
        case backingOff
    }

    private struct State {
        var ips: [String]
        var current = 0
        var failuresInRotation = 0
        var backingOffUntil: ContinuousClock.Instant?
        var probeInFlight = false
        var failedRotations = 0
    }

    public let backoff: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state: NIOLockedValueBox<State>

    public init(ips: [String], backoff: Duration = .seconds(30), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.state = NIOLockedValueBox(State(ips: ips))
        self.backoff = backoff
        self.now = now
    }

    /// The IPs in the current set (in configured order, not rotation order).
    public var ips: [String] { state.withLockedValue { $0.ips } }

    /// Replaces the set. The same set again changes nothing (keeps the rotation and any back-off);
    /// a different one starts with its first IP and no back-off.
    public func replace(with ips: [String]) {
        state.withLockedValue { state in
            guard state.ips != ips else { return }
            state = State(ips: ips, failedRotations: state.failedRotations)
        }
    }

    /// Whether a query may go out now, and in which server order.
    public func admit() -> Admission {
        let now = self.now()
        return state.withLockedValue { state in
            if let until = state.backingOffUntil {
                guard now >= until, !state.probeInFlight else { return .backingOff }
                state.probeInFlight = true
            }
            return .go(Self.rotated(state.ips, from: state.current))
        }
    }

    /// `ip` answered properly: it becomes the first choice and any back-off ends.
    public func succeeded(ip: String?) {
        state.withLockedValue { state in
            if let ip, let index = state.ips.firstIndex(of: ip) { state.current = index }
            state.failuresInRotation = 0
            state.backingOffUntil = nil
            state.probeInFlight = false
        }
    }

    /// `ip` (or, when unknown, the current first choice) failed. Returns true when a whole
    /// rotation has now failed and the service is backing off.
    @discardableResult
    public func failed(ip: String?) -> Bool {
        let now = self.now()
        return state.withLockedValue { state in
            let count = max(state.ips.count, 1)
            if let ip, let index = state.ips.firstIndex(of: ip) {
                state.current = (index + 1) % count
            } else {
                state.current = (state.current + 1) % count
            }
            state.failuresInRotation += 1
            if state.failuresInRotation >= state.ips.count || state.probeInFlight {
                state.backingOffUntil = now + backoff
                state.probeInFlight = false
                state.failuresInRotation = 0
                state.failedRotations += 1
                return true
            }
            return false
        }
    }

    /// An answer that says nothing about the server's health (e.g. an auth error): end a probe.
    public func neutral() {
        state.withLockedValue { $0.probeInFlight = false }
    }

    /// How many times a whole rotation has failed so far (a change tells a caller that its
    /// query ended one).
    public var failedRotations: Int { state.withLockedValue { $0.failedRotations } }

    public var isBackingOff: Bool {
        let now = self.now()
        return state.withLockedValue { state in
            guard let until = state.backingOffUntil else { return false }
            return now < until
        }
    }

    static func rotated(_ ips: [String], from start: Int) -> [String] {
        guard !ips.isEmpty else { return [] }
        let start = start % ips.count
        return Array(ips[start...] + ips[..<start])
    }
}

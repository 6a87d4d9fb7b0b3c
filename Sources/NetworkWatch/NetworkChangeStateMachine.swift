import NIOCore
import ProxyKit

/// Decides when a burst of netlink events (or a poll) is worth a look at the interface addresses,
/// and whether what it sees is a change. No I/O, no clock: every input carries `now`, and the
/// actions say what to do (arm a timer, read the addresses, respond to a change).
///
/// Events are debounced: the addresses are read `debounce` after the last event of a burst, but no
/// later than `maxDelay` after its first, so a steady trickle of route updates cannot postpone the
/// check forever. Only a different set of addresses is a change. After a response, the next read
/// waits `holdDown`: an interface that flaps resets health and retires the pool once per
/// hold-down, not on every flap (what changed meanwhile is seen in one read).
struct NetworkChangeStateMachine: Sendable {
    struct Configuration: Sendable, Equatable {
        /// Quiet time after the last event before the addresses are read. Default 250 ms.
        var debounce: TimeAmount = .milliseconds(250)
        /// Longest wait after the first event of a burst. Default 2 s.
        var maxDelay: TimeAmount = .seconds(2)
        /// Least time between two responses. Default 5 s.
        var holdDown: TimeAmount = .seconds(5)
    }

    enum Action: Equatable {
        case none
        /// Call `timerFired` at this deadline (replacing any timer armed before).
        case armTimer(NIODeadline)
        /// Read the interface addresses now and pass them to `addressesRead`.
        case readAddresses
        /// The addresses changed: reset what was learned on the old network.
        case respond(NetworkChange)
    }

    private enum State: Equatable {
        case idle
        case pending(first: NIODeadline, last: NIODeadline)
    }

    let configuration: Configuration
    /// The addresses last seen.
    private(set) var current: InterfaceAddresses
    private var state = State.idle
    /// When the read in progress was started by the timer (nil: a poll or none).
    private var readStartedAt: NIODeadline?
    /// When the last response's read started.
    private var lastResponse: NIODeadline?

    init(initial: InterfaceAddresses, configuration: Configuration = .init()) {
        self.current = initial
        self.configuration = configuration
    }

    /// A netlink message about addresses or routes arrived (or some may have been lost).
    mutating func eventReceived(now: NIODeadline) -> Action {
        switch state {
        case .idle:
            state = .pending(first: now, last: now)
            return .armTimer(now + configuration.debounce)
        case .pending(let first, _):
            // The armed timer finds the new deadline when it fires: no re-arming per event.
            state = .pending(first: first, last: now)
            return .none
        }
    }

    mutating func timerFired(now: NIODeadline) -> Action {
        guard case .pending(let first, let last) = state else { return .none }
        var due = min(last + configuration.debounce, first + configuration.maxDelay)
        if let lastResponse { due = max(due, lastResponse + configuration.holdDown) }
        guard now >= due else { return .armTimer(due) }
        readStartedAt = now
        return .readAddresses
    }

    /// Polling (no netlink): read the addresses now.
    mutating func pollDue() -> Action {
        readStartedAt = nil
        return .readAddresses
    }

    mutating func addressesRead(_ addresses: InterfaceAddresses) -> Action {
        state = .idle
        defer { readStartedAt = nil }
        guard addresses != current else { return .none }
        let change = NetworkChange(old: current, new: addresses)
        current = addresses
        if let readStartedAt { lastResponse = readStartedAt }
        return .respond(change)
    }
}

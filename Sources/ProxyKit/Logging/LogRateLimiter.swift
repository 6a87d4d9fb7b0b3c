import NIOConcurrencyHelpers
import NIOCore

/// At most one log line per interval for a kind of event a client can repeat at will (refused
/// connections, failed accepts); the line says how many were suppressed since the last one.
package final class LogRateLimiter: Sendable {
    private struct State {
        var last: NIODeadline?
        var suppressed = 0
    }

    private let interval: TimeAmount
    private let state = NIOLockedValueBox(State())

    package init(interval: TimeAmount = .seconds(1)) {
        self.interval = interval
    }

    /// Runs `log` with the number of events suppressed before it, or counts this one as suppressed.
    package func run(now: NIODeadline = .now(), _ log: (Int) -> Void) {
        let suppressed: Int? = state.withLockedValue { state in
            if let last = state.last, now - last < interval {
                state.suppressed += 1
                return nil
            }
            state.last = now
            defer { state.suppressed = 0 }
            return state.suppressed
        }
        if let suppressed { log(suppressed) }
    }
}

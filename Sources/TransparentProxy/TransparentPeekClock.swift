import NIOCore
import ProxyConfig

/// When a transparent connection's peek stops waiting, and what it does then: a value type the
/// handler feeds with what it holds and the time, so every timing decision is tested without a
/// channel or a real clock.
package struct TransparentPeekClock {
    /// When the connection was accepted.
    let started: NIODeadline
    /// `--transparent-peek-timeout`: how long a connection that sent nothing is waited for.
    let silentTimeout: TimeAmount
    /// `--transparent-hello-timeout`: how long (from the accept) a ClientHello or request head
    /// that has begun is waited for.
    let helloTimeout: TimeAmount
    /// `--transparent-fallback`: what a hello still incomplete at `helloTimeout` gets.
    let fallback: TransparentFallback
    private var sawBytes = false

    package init(started: NIODeadline, silentTimeout: TimeAmount, helloTimeout: TimeAmount, fallback: TransparentFallback) {
        self.started = started
        self.silentTimeout = silentTimeout
        self.helloTimeout = helloTimeout
        self.fallback = fallback
    }

    /// When the handler's timer should call `step` again: the short timeout only while nothing
    /// has arrived (a server-speaks-first client waits for its greeting); once bytes begin a
    /// ClientHello or a request head, the hello timeout (never the shorter of the two), since a
    /// hello sent slowly must still go by its name and not to the address the client dialed.
    package var deadline: NIODeadline { started + (sawBytes ? max(silentTimeout, helloTimeout) : silentTimeout) }

    /// What to do after `peek` (of `received` bytes) at `now`, and the outcome to count.
    package mutating func step(_ peek: TransparentPeek, received: Int, now: NIODeadline) -> (TransparentPlan.Step, TransparentStats.Peek?) {
        guard peek == .needMore else { return TransparentPlan.step(decided: peek) }
        // `.needMore` with bytes means they begin a ClientHello or a request head (`classify`
        // answers anything else at once).
        if received > 0 { sawBytes = true }
        guard now >= deadline else { return (.wait, nil) }
        guard sawBytes else { return (.relayOriginal, .silent) }
        return (fallback == .original ? .relayOriginal : .refuse, .incomplete)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore
import Synchronization

/// Stops a listener from spinning when accept() fails for lack of descriptors or memory (EMFILE,
/// ENFILE, ENOBUFS, ENOMEM), the way nginx does (`ngx_disable_accept_events`): the listening
/// socket's read interest is removed from epoll for `pause`, then restored.
///
/// NIO's `AcceptBackoffHandler` cannot do this: it delays the next `read()`, but a failed accept
/// leaves the server channel's read pending, so no `read()` ever comes and the socket stays
/// registered. The listener is level-triggered, so while a connection waits in the backlog every
/// epoll_wait returns at once and accept fails again — one core at 100 %. Turning `autoRead` off
/// unregisters the read interest; turning it on registers it again.
///
/// While paused, connections wait in the kernel's backlog (clients see a slow connect, not an
/// error) and open connections are served as usual; at most one accept is tried per `pause`.
package final class AcceptPauseHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = any Channel
    package typealias InboundOut = any Channel

    /// Accept failures and pauses since start, shared by the listeners that report them.
    package final class Counters: Sendable {
        private let failures = Atomic<Int>(0)
        package var acceptFailures: Int { failures.load(ordering: .relaxed) }
        func failed() { failures.wrappingAdd(1, ordering: .relaxed) }
        package init() {}
    }

    private let pause: TimeAmount
    private let counters: Counters
    private let onPause: (IOError) -> Void
    /// Turns the listener's read interest off and on (`autoRead`); a test observes it instead.
    private let setAccepting: (ChannelHandlerContext, Bool) -> Void
    private var resumption: Scheduled<Void>?

    init(
        pause: TimeAmount = .milliseconds(100), counters: Counters, onPause: @escaping (IOError) -> Void,
        setAccepting: @escaping (ChannelHandlerContext, Bool) -> Void = { context, on in
            try? context.channel.syncOptions?.setOption(.autoRead, value: on)
        }
    ) {
        self.pause = pause
        self.counters = counters
        self.onPause = onPause
        self.setAccepting = setAccepting
    }

    /// The accept errors that come from a shortage and go away by themselves (NIO keeps the
    /// listener open for exactly these, and ECONNABORTED, which is one client's and needs no pause).
    static func isShortage(_ error: any Error) -> IOError? {
        guard let error = error as? IOError else { return nil }
        switch error.errnoCode {
        case EMFILE, ENFILE, ENOBUFS, ENOMEM: return error
        default: return nil
        }
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let shortage = Self.isShortage(error) else {
            context.fireErrorCaught(error)
            return
        }
        counters.failed()
        guard resumption == nil else { return }
        onPause(shortage)
        setAccepting(context, false)
        resumption = context.eventLoop.assumeIsolated().scheduleTask(in: pause) { [self] in
            resumption = nil
            // Registers the read interest again: a connection waiting in the backlog is accepted now.
            setAccepting(context, true)
        }
    }

    package func channelInactive(context: ChannelHandlerContext) {
        resumption?.cancel()
        resumption = nil
        context.fireChannelInactive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        resumption?.cancel()
        resumption = nil
    }
}

@available(*, unavailable)
extension AcceptPauseHandler: Sendable {}

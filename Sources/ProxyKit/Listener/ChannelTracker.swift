import NIOConcurrencyHelpers
import NIOCore

/// Knows every open client channel, so shutdown can ask them to finish (quiesce) and, after the
/// grace period, close whatever is left.
package final class ChannelTracker: Sendable {
    package init() {}

    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var emptyWaiters: [EventLoopPromise<Void>] = []
    }

    private let state = NIOLockedValueBox(State())

    package func add(_ channel: any Channel) {
        state.withLockedValue { $0.channels[ObjectIdentifier(channel)] = channel }
        channel.closeFuture.whenComplete { _ in
            let waiters: [EventLoopPromise<Void>] = self.state.withLockedValue { state in
                state.channels.removeValue(forKey: ObjectIdentifier(channel))
                guard state.channels.isEmpty else { return [] }
                defer { state.emptyWaiters.removeAll() }
                return state.emptyWaiters
            }
            waiters.forEach { $0.succeed() }
        }
    }

    package var count: Int { state.withLockedValue { $0.channels.count } }

    /// Fires `ChannelShouldQuiesceEvent` on every channel: idle ones close, busy ones close after
    /// their current request.
    package func quiesceAll() {
        for channel in state.withLockedValue({ Array($0.channels.values) }) {
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
    }

    package func closeAll() {
        for channel in state.withLockedValue({ Array($0.channels.values) }) {
            channel.close(promise: nil)
        }
    }

    /// Completes when no channel is open.
    package func allClosed(on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        let empty = state.withLockedValue { state -> Bool in
            if state.channels.isEmpty { return true }
            state.emptyWaiters.append(promise)
            return false
        }
        if empty { promise.succeed() }
        return promise.futureResult
    }
}

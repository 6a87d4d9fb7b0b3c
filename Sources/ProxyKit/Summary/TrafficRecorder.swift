import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Synchronization

/// The `TrafficTally` of a running proxy, kept per event loop: each loop adds its own finished
/// requests under a lock no other loop takes (only a `/summary` read does), so counting every
/// request never bounces a shared cache line between loops.
package final class TrafficRecorder: Sendable {
    private let shards: [ObjectIdentifier: NIOLockedValueBox<TrafficTally>]
    /// For records finished off the event loops (none today; kept correct anyway).
    private let other = NIOLockedValueBox(TrafficTally())
    /// CONNECT tunnels and upgraded connections open now.
    private let tunnels = Atomic<Int>(0)

    package init(eventLoops: [any EventLoop]) {
        var shards: [ObjectIdentifier: NIOLockedValueBox<TrafficTally>] = [:]
        for loop in eventLoops { shards[ObjectIdentifier(loop)] = NIOLockedValueBox(TrafficTally()) }
        self.shards = shards
    }

    package func add(_ record: AccessLogRecord) {
        let shard = MultiThreadedEventLoopGroup.currentEventLoop.flatMap { shards[ObjectIdentifier($0)] } ?? other
        shard.withLockedValue { $0.add(record) }
    }

    package func tunnelOpened() { tunnels.wrappingAdd(1, ordering: .relaxed) }
    package func tunnelClosed() { tunnels.wrappingSubtract(1, ordering: .relaxed) }
    package var openTunnels: Int { tunnels.load(ordering: .relaxed) }

    /// Every loop's tally added up.
    package var total: TrafficTally {
        shards.values.reduce(other.withLockedValue { $0 }) { $0 + $1.withLockedValue { $0 } }
    }
}

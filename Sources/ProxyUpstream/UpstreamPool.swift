import Logging
import NIOCore
import ProxyKit

/// Idle keep-alive upstream connections of one event loop, by origin. Only touched on its loop, so
/// no lock: a client and the upstream it uses always share a loop.
///
/// A busy keep-alive client returns its connection after every response and takes it back with the
/// next request, so `take` and `put` allocate nothing and schedule nothing: each origin keeps one
/// list for the pool's life, a connection remembers when it went idle, and one sweep task per pool
/// closes connections idle for `idleTimeout` (it wakes at the earliest such moment, not periodically).
///
/// A connection is reused only while its lease holds (`ConnectionLease`): once the answer it was
/// dialed from has expired, `leases` is asked whether its address is still current, on `take` and
/// when it comes back with `put`. One that is not is closed instead, so a connection kept busy by
/// steady traffic follows a changed answer within its TTL.
package final class UpstreamPool: @unchecked Sendable {
    package let eventLoop: any EventLoop
    let maxIdlePerOrigin: Int
    let idleTimeout: TimeAmount

    private final class Slot {
        /// Oldest first: `take` pops the most recently used (LIFO keeps hot connections hot and lets
        /// the rest time out), the sweep expires from the front.
        var connections: [UpstreamHTTPConnection] = []
    }

    private var idle: [PoolKey: Slot] = [:]
    private var sweep: Scheduled<Void>?
    private var sweepDeadline: NIODeadline?
    /// Retired by an admin purge (`UpstreamPool+Retire.swift`): connections with a serial below
    /// these are closed instead of pooled when their exchange returns them.
    var retiredAllBelow: UInt64 = 0
    var retiredBelow: [String: UInt64] = [:]

    /// Renews expired leases; nil: leases are never checked (tests of the pool's own bookkeeping).
    let leases: (any LeaseRenewing)?
    /// Counts connections retired because their lease was not renewed; nil: none.
    let metrics: ProxyMetrics?
    let logger: Logger?

    package init(
        eventLoop: any EventLoop, maxIdlePerOrigin: Int, idleTimeout: TimeAmount,
        leases: (any LeaseRenewing)? = nil, metrics: ProxyMetrics? = nil, logger: Logger? = nil
    ) {
        self.eventLoop = eventLoop
        self.maxIdlePerOrigin = maxIdlePerOrigin
        self.idleTimeout = idleTimeout
        self.leases = leases
        self.metrics = metrics
        self.logger = logger
    }

    /// The most recently used live idle connection to `key`, if any.
    package func take(_ key: PoolKey) -> UpstreamHTTPConnection? {
        eventLoop.preconditionInEventLoop()
        guard let slot = idle[key] else { return nil }
        while let connection = slot.connections.popLast() {
            connection.pool = nil
            guard connection.isUsable else { continue }
            if leaseHolds(connection) { return connection }
            connection.close()
        }
        return nil
    }

    /// Whether `connection` may be used again: its lease is current, or the resolver renews it.
    func leaseHolds(_ connection: UpstreamHTTPConnection) -> Bool {
        guard let leases else { return true }
        let now = eventLoop.now
        if connection.lease.isCurrent(at: now) { return true }
        switch leases.renewLease(host: connection.key.host, ip: connection.dialedIP ?? "", source: connection.lease.source, now: now) {
        case .renew(let until):
            connection.lease.until = until
            return true
        case .retire(let reason):
            metrics?.poolLeaseRetirements.increment()
            logger?.debug(
                "pooled upstream connection retired",
                metadata: ["proxy.host": "\(connection.key.host)", "upstream.ip": "\(connection.dialedIP ?? "?")", "reason": "\(reason)"]
            )
            return false
        }
    }

    /// Keeps a finished connection for reuse, or closes it: when the origin's idle slots are full,
    /// its lease ended, it was retired, or it is not reusable (made while the parent was down).
    func put(_ connection: UpstreamHTTPConnection) {
        eventLoop.preconditionInEventLoop()
        connection.detach()
        connection.setReadAllowed(true)
        guard connection.isUsable, connection.reusable, maxIdlePerOrigin > 0, !isRetired(connection), leaseHolds(connection) else {
            connection.close()
            return
        }
        let slot: Slot
        if let existing = idle[connection.key] {
            slot = existing
        } else {
            slot = Slot()
            idle[connection.key] = slot
        }
        guard slot.connections.count < maxIdlePerOrigin else {
            connection.close()
            return
        }
        let now = eventLoop.now
        connection.idleSince = now
        connection.pool = self
        slot.connections.append(connection)
        if sweepDeadline == nil { scheduleSweep(at: now + idleTimeout) }
    }

    /// An idle connection closed (the origin dropped it, or the sweep closed it).
    func remove(_ connection: UpstreamHTTPConnection) {
        connection.pool = nil
        guard let slot = idle[connection.key], let index = slot.connections.firstIndex(where: { $0 === connection }) else { return }
        slot.connections.remove(at: index)
    }

    private func scheduleSweep(at deadline: NIODeadline) {
        sweepDeadline = deadline
        sweep = eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.sweepExpired()
        }
    }

    /// Closes every connection idle for `idleTimeout`, forgets origins with nothing idle, and wakes
    /// again when the next connection would expire.
    private func sweepExpired() {
        sweep = nil
        sweepDeadline = nil
        let now = eventLoop.now
        var expired: [UpstreamHTTPConnection] = []
        var next: NIODeadline?
        for (key, slot) in idle {
            while let oldest = slot.connections.first, oldest.idleSince + idleTimeout <= now {
                slot.connections.removeFirst()
                expired.append(oldest)
            }
            if let oldest = slot.connections.first {
                next = min(next ?? .distantFuture, oldest.idleSince + idleTimeout)
            } else {
                idle[key] = nil
            }
        }
        for connection in expired {
            connection.pool = nil
            connection.close()
        }
        if let next { scheduleSweep(at: next) }
    }

    package func closeAll() {
        eventLoop.preconditionInEventLoop()
        let all = idle.values.flatMap(\.connections)
        idle.removeAll()
        sweep?.cancel()
        sweep = nil
        sweepDeadline = nil
        for connection in all {
            connection.pool = nil
            connection.close()
        }
    }

    var idleCount: Int { idle.values.reduce(0) { $0 + $1.connections.count } }

    /// Origins with a slot (possibly empty until the next sweep).
    var idleKeys: [PoolKey] { Array(idle.keys) }
}

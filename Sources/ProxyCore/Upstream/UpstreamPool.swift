import NIOCore

/// Idle keep-alive upstream connections of one event loop, by origin. Only touched on its loop, so
/// no lock: a client and the upstream it uses always share a loop.
final class UpstreamPool: @unchecked Sendable {
    let eventLoop: any EventLoop
    let maxIdlePerOrigin: Int
    let idleTimeout: TimeAmount
    private var idle: [PoolKey: [UpstreamHTTPConnection]] = [:]

    init(eventLoop: any EventLoop, maxIdlePerOrigin: Int, idleTimeout: TimeAmount) {
        self.eventLoop = eventLoop
        self.maxIdlePerOrigin = maxIdlePerOrigin
        self.idleTimeout = idleTimeout
    }

    /// The most recently used live idle connection to `key`, if any (LIFO keeps hot connections hot
    /// and lets the rest time out).
    func take(_ key: PoolKey) -> UpstreamHTTPConnection? {
        eventLoop.preconditionInEventLoop()
        while var list = idle[key], let connection = list.popLast() {
            idle[key] = list.isEmpty ? nil : list
            connection.idleTimer?.cancel()
            connection.idleTimer = nil
            connection.onIdleClose = nil
            if connection.isUsable { return connection }
        }
        return nil
    }

    /// Keeps a finished connection for reuse, or closes it when the origin's idle slots are full.
    func put(_ connection: UpstreamHTTPConnection) {
        eventLoop.preconditionInEventLoop()
        connection.delegate = nil
        connection.setReadAllowed(true)
        guard connection.isUsable, maxIdlePerOrigin > 0, (idle[connection.key]?.count ?? 0) < maxIdlePerOrigin else {
            connection.close()
            return
        }
        idle[connection.key, default: []].append(connection)
        connection.onIdleClose = { [unowned self] closed in self.remove(closed) }
        connection.idleTimer = eventLoop.assumeIsolated().scheduleTask(in: idleTimeout) {
            connection.close()
        }
    }

    private func remove(_ connection: UpstreamHTTPConnection) {
        guard var list = idle[connection.key], let index = list.firstIndex(where: { $0 === connection }) else { return }
        list.remove(at: index)
        idle[connection.key] = list.isEmpty ? nil : list
    }

    func closeAll() {
        eventLoop.preconditionInEventLoop()
        let all = idle.values.flatMap { $0 }
        idle.removeAll()
        for connection in all {
            connection.onIdleClose = nil
            connection.close()
        }
    }

    var idleCount: Int { idle.values.reduce(0) { $0 + $1.count } }
}

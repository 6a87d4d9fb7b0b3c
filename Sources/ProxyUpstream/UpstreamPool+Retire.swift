import NIOCore
import Synchronization

/// Purging a name (admin `DELETE /cache?host=H`) means "stop using the addresses it had": idle
/// connections to H close now, and connections busy at the purge close when their exchange ends
/// instead of going back to the pool, so the next request resolves and dials afresh.
extension UpstreamPool {
    /// Per-host retirement marks kept at most; beyond it one "retire everything older" mark replaces
    /// them (closing a few extra idle connections is harmless, unbounded growth is not).
    static let maxRetiredHosts = 1024

    /// Closes the idle connections to `host` (every host when nil) and retires the busy ones.
    /// Returns how many idle connections were closed.
    @discardableResult
    package func retire(host: String?) -> Int {
        eventLoop.preconditionInEventLoop()
        let below = UpstreamHTTPConnection.serialsIssued
        let target = host.map(Self.normalizedHost)
        if let target {
            retiredBelow[target] = below
            if retiredBelow.count > Self.maxRetiredHosts {
                retiredAllBelow = below
                retiredBelow.removeAll()
            }
        } else {
            retiredAllBelow = below
            retiredBelow.removeAll()
        }
        let keys = idleKeys.filter { key in target.map { Self.normalizedHost(key.host) == $0 } ?? true }
        var closed = 0
        for key in keys {
            while let connection = take(key) {
                connection.close()
                closed += 1
            }
        }
        return closed
    }

    /// Whether a purge since `connection` was created covers it.
    func isRetired(_ connection: UpstreamHTTPConnection) -> Bool {
        if connection.serial < retiredAllBelow { return true }
        guard !retiredBelow.isEmpty, let mark = retiredBelow[Self.normalizedHost(connection.key.host)] else { return false }
        return connection.serial < mark
    }

    /// Hosts compare like cache keys: any case, without brackets or a trailing dot.
    static func normalizedHost(_ host: String) -> String {
        var text = host.lowercased()
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        while text.hasSuffix(".") { text.removeLast() }
        return text
    }
}

extension UpstreamHTTPConnection {
    private static let serials = Atomic<UInt64>(0)

    /// The next connection's serial (1, 2, ...).
    static func nextSerial() -> UInt64 {
        serials.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// One more than the newest serial handed out so far: every existing connection is below it.
    static var serialsIssued: UInt64 {
        serials.load(ordering: .relaxed) + 1
    }
}

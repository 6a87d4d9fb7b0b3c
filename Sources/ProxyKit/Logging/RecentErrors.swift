import Synchronization

/// One failed request or tunnel as `/errors` and the admin page show it.
package struct RecentError: Sendable, Encodable, Equatable {
    /// When it finished, ISO 8601 UTC with milliseconds.
    package var at: String
    /// "request" or "tunnel".
    package var type: String
    package var client: String
    package var method: String
    /// "host:port" ("[v6]:port"); empty when the request never named a destination.
    package var target: String
    /// The address of the connection used; for a request that got none, the addresses dialed in
    /// vain ("203.0.113.7, 203.0.113.8"); absent when nothing was dialed.
    package var ip: String?
    /// The error kind: the access log's and the metrics' bounded label (`connect_failed`, …).
    package var kind: String
    /// The status the client got; 0 when it got none.
    package var status: Int
    /// The error message, at most `RecentErrors.maxReasonLength` characters.
    package var reason: String
}

/// `/errors`: the last failures, newest first, and how many there were since the start.
package struct RecentErrorsReport: Sendable, Encodable, Equatable {
    /// How many are kept.
    package var capacity: Int
    /// Failures recorded since the start, the overwritten ones included.
    package var total: Int
    package var errors: [RecentError]
}

/// The last `capacity` failed requests and tunnels, kept in a bounded ring from the same finished
/// records the access log and the metrics read, so an operator who opens the admin page after an
/// incident still sees it. Written only for failures: a lock taken on the error path, never on
/// a successful request's.
package final class RecentErrors: Sendable {
    static let defaultCapacity = 100
    static let maxReasonLength = 200

    private let ring: Mutex<RingBuffer<RecentError>>
    private let clock: @Sendable () -> String

    package init(capacity: Int = RecentErrors.defaultCapacity, clock: @escaping @Sendable () -> String = { Timestamp.iso8601Now() }) {
        self.ring = Mutex(RingBuffer(capacity: capacity))
        self.clock = clock
    }

    /// Keeps `record` if it ended in an error (a `ProxyError` kind or an abort reason).
    package func record(_ record: AccessLogRecord) {
        guard let kind = record.errorReason else { return }
        var target = ""
        if !record.host.isEmpty {
            let host = record.host.contains(":") ? "[\(record.host)]" : record.host
            target = record.port > 0 ? "\(host):\(record.port)" : host
        }
        let message = record.error ?? kind
        let entry = RecentError(
            at: clock(), type: record.kind.rawValue, client: record.client, method: record.method, target: target,
            ip: record.dialedIP ?? (record.failedIPs.isEmpty ? nil : record.failedIPs.joined(separator: ", ")), kind: kind, status: record.status,
            reason: message.count > Self.maxReasonLength ? String(message.prefix(Self.maxReasonLength - 1)) + "…" : message)
        ring.withLock { $0.append(entry) }
    }

    package var report: RecentErrorsReport {
        ring.withLock { RecentErrorsReport(capacity: $0.capacity, total: $0.appended, errors: $0.newestFirst) }
    }
}

/// What finished requests and tunnels added up to since the start, for `/summary` and the admin
/// page: answers by status class, bytes each way, and request times. Counted from the same
/// finished records as the access log and the metrics, whether or not those are on.
package struct TrafficTally: Sendable, Equatable {
    /// Answers by class: 2xx (a successful upgrade's 101 included), 3xx, 4xx, 5xx.
    var statusClasses = [0, 0, 0, 0]
    /// Requests the client left before any answer (no status).
    var noAnswer = 0
    /// Bytes from clients to origins and back (request and response bodies, tunnel payloads).
    var bytesUp = 0
    var bytesDown = 0
    /// Total time of forwarded requests (not tunnels, whose time is how long they stayed open).
    package var latency = LatencyHistogram()

    /// Connections refused at accept are no requests (`ProxyMetrics` leaves them out too).
    mutating func add(_ record: AccessLogRecord) {
        if let reason = record.errorReason, ProxyMetrics.rejectionReasons.contains(reason) { return }
        bytesUp += record.bytesUp
        bytesDown += record.bytesDown
        guard record.status >= 100 else {
            noAnswer += 1
            return
        }
        statusClasses[min(max(record.status / 100, 2), 5) - 2] += 1
        if record.kind == .request, record.status != 101 { latency.record(ms: record.totalMs) }
    }

    static func + (a: TrafficTally, b: TrafficTally) -> TrafficTally {
        TrafficTally(
            statusClasses: zip(a.statusClasses, b.statusClasses).map { $0 + $1 }, noAnswer: a.noAnswer + b.noAnswer,
            bytesUp: a.bytesUp + b.bytesUp, bytesDown: a.bytesDown + b.bytesDown, latency: a.latency + b.latency)
    }
}

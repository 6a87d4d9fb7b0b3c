import NIOCore
import ProxyKit

/// Shared by the two glue handlers of one tunnel: byte counts, and the access-log record written
/// once, when both sides are gone.
package final class TunnelRecorder {
    var record: AccessLogRecord
    let started: NIODeadline
    private let onFinish: (AccessLogRecord) -> Void
    private var openSides = 2
    var closeReason: String?

    package init(record: AccessLogRecord, started: NIODeadline, onFinish: @escaping (AccessLogRecord) -> Void) {
        self.record = record
        self.started = started
        self.onFinish = onFinish
    }

    func sideClosed() {
        openSides -= 1
        guard openSides == 0 else { return }
        record.totalMs = (NIODeadline.now() - started).milliseconds
        if let closeReason { record.abort("tunnel_idle_timeout", message: closeReason) }
        onFinish(record)
    }
}

@available(*, unavailable)
extension TunnelRecorder: Sendable {}

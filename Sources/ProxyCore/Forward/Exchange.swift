import NIOCore
import NIOHTTP1

/// One request/response pair on a client connection, from the request head to the end of the
/// response. Lives only on the client's event loop.
final class Exchange {
    let clientHead: HTTPRequestHead
    let target: RequestTarget
    /// Port and transport to the origin (TLS for https:// and tls-upgrade rules).
    let route: UpstreamRoute
    let request: MessageRewriter.RewrittenRequest
    let started: NIODeadline
    var record: AccessLogRecord

    var upstream: UpstreamHTTPConnection?
    /// Request parts that arrived before an upstream connection was ready.
    var buffered: [HTTPServerRequestPart] = []
    var requestComplete = false
    var response: MessageRewriter.RewrittenResponse?
    var responseComplete = false
    /// One silence timer per exchange; `lastUpstreamActivity` moves with every part and the timer
    /// re-arms itself from it when it fires early (cheaper than rescheduling per body chunk).
    var responseTimer: Scheduled<Void>?
    var lastUpstreamActivity = NIODeadline.uptimeNanoseconds(0)

    func cancelResponseTimer() {
        responseTimer?.cancel()
        responseTimer = nil
    }
    /// The upstream connection closed (or reset) before any response byte: a fresh connection to a
    /// failing address, or a pooled one the origin dropped just as we reused it. Such a request is
    /// sent again once, on a new connection to another address when there is one, when that is safe.
    var retried = false
    /// The upstream has produced at least one byte of response (interim or final).
    var sawResponseBytes = false

    init(
        clientHead: HTTPRequestHead,
        target: RequestTarget,
        route: UpstreamRoute,
        request: MessageRewriter.RewrittenRequest,
        record: AccessLogRecord
    ) {
        self.clientHead = clientHead
        self.target = target
        self.route = route
        self.request = request
        self.started = .now()
        self.record = record
    }

    var poolKey: PoolKey { route.poolKey }

    var responseStarted: Bool { response != nil }

    /// Idempotent (RFC 9110 §9.2.2) and without a body: replaying it cannot do harm.
    var isSafeToRetry: Bool {
        guard request.framing == .none, !request.isUpgrade else { return false }
        switch clientHead.method {
        case .GET, .HEAD, .OPTIONS, .TRACE, .PUT, .DELETE: return true
        default: return false
        }
    }
}

@available(*, unavailable)
extension Exchange: Sendable {}

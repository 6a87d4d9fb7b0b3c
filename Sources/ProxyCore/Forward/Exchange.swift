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
    /// The upstream must make progress (take request bytes or send response bytes) within the
    /// upstream timeout, counted from `lastUpstreamActivity`. The client connection's one timer
    /// checks this; moving the stamp costs a store, not a reschedule.
    var watchingUpstream = false
    var lastUpstreamActivity = NIODeadline.uptimeNanoseconds(0)

    /// The response is complete (or the exchange is over): upstream silence no longer matters.
    func stopWatchingUpstream() {
        watchingUpstream = false
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

import NIOCore
import NIOHTTP1
import ProxyHTTP
import ProxyKit

/// One request/response pair on a client connection, from the request head to the end of the
/// response: a value owned by `ClientConnectionStateMachine`, never by a handler.
struct ExchangeState {
    /// The upstream side of the exchange.
    enum Upstream: Equatable {
        /// Dialing (or taking from the pool); request parts wait in `buffered`.
        case connecting
        /// Carrying the exchange. `pooled`: it had served an earlier exchange.
        case attached(pooled: Bool)
        /// Gone (closed, failed, or handed back).
        case none
    }

    /// How far the client's request has come.
    enum Request: Equatable {
        case streaming
        case complete
    }

    /// How far the origin's response has come.
    enum Response {
        /// Nothing yet, or only interim (1xx) responses.
        case awaiting(sawBytes: Bool)
        /// The final head went to the client; its body is streaming.
        case streaming(MessageRewriter.RewrittenResponse)
        case complete(MessageRewriter.RewrittenResponse)
    }

    let clientHead: HTTPRequestHead
    let target: RequestTarget
    /// Port and transport to the origin (TLS for https:// and tls-upgrade rules).
    let route: UpstreamRoute
    let request: MessageRewriter.RewrittenRequest
    let started: NIODeadline
    var record: AccessLogRecord

    var upstream = Upstream.connecting
    var requestPhase = Request.streaming
    var responsePhase = Response.awaiting(sawBytes: false)
    /// Request parts that arrived before an upstream connection was ready.
    var buffered: [HTTPServerRequestPart] = []
    /// While set, the upstream must make progress (take request bytes or send response bytes)
    /// within the upstream timeout, counted from this stamp. Moving it costs a store, not a timer.
    var lastUpstreamActivity: NIODeadline?
    /// A request whose connection closed before any response byte is sent again once.
    var retried = false

    init(
        clientHead: HTTPRequestHead,
        target: RequestTarget,
        route: UpstreamRoute,
        request: MessageRewriter.RewrittenRequest,
        record: AccessLogRecord,
        started: NIODeadline
    ) {
        self.clientHead = clientHead
        self.target = target
        self.route = route
        self.request = request
        self.record = record
        self.started = started
    }

    var requestComplete: Bool { requestPhase == .complete }

    var responseStarted: Bool {
        if case .awaiting = responsePhase { return false }
        return true
    }

    var responseComplete: Bool {
        if case .complete = responsePhase { return true }
        return false
    }

    var sawResponseBytes: Bool {
        if case .awaiting(let sawBytes) = responsePhase { return sawBytes }
        return true
    }

    /// Idempotent (RFC 9110 §9.2.2) and without a body: replaying it cannot do harm.
    var isSafeToRetry: Bool {
        guard request.framing == .none, !request.isUpgrade else { return false }
        switch clientHead.method {
        case .GET, .HEAD, .OPTIONS, .TRACE, .PUT, .DELETE: return true
        default: return false
        }
    }
}

import NIOCore
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

/// One request/response pair on a client connection, from the request head to the end of the
/// response (anchor: async-http-client's `HTTPRequestStateMachine`): how far the request and the
/// response have come, the upstream connection that carries them, the one retry, and the
/// upstream timeout's stamp. `ClientConnectionStateMachine` owns it, feeds it the exchange's
/// events and turns the actions it returns into the connection's.
struct ExchangeStateMachine {
    /// What the connection machine must do after an exchange event.
    enum Action {
        case none
        /// Upstream activity, nothing to write: the upstream timeout runs from now.
        case touched
        /// The upstream is attached: send the head and the parts that waited (upstream activity).
        case sendRequest(RequestHead, buffered: [RequestPart])
        /// Forward a request part (upstream activity).
        case writeUpstream(RequestPart)
        /// Forward a response part (upstream activity).
        case writeClient(ResponsePart)
        /// The upstream timeout falls due later than the timer fired: schedule it then.
        case scheduleTimer(NIODeadline)
        /// Nothing was answered on the connection that closed: dial again, `blamed` tried last.
        case retry(UpstreamRoute, blamed: FailedAddress?)
        /// The exchange is over with `error`; `blamed` failed (for the health table).
        case failed(ProxyError, Failure, blamed: FailedAddress?)
        /// The origin accepted an upgrade: the exchange becomes a tunnel, its 101 goes out first.
        case upgraded(ResponseHead, record: AccessLogRecord, started: NIODeadline)
        /// The response ended. `early`: the request was still coming (its rest cannot be skipped
        /// safely, so the connection closes); `closeClient`: the response asks the client
        /// connection to close.
        case responseEnded(trailers: HeaderFields?, upstream: ClientConnectionAction.UpstreamDisposal, log: AccessLogRecord?, early: Bool, closeClient: Bool)
    }

    /// How a failed exchange reaches the client.
    enum Failure {
        /// Nothing was sent yet: an error response (the record has its status and time).
        case answer(AccessLogRecord)
        /// The response started: the connection is cut, the client sees a truncated response
        /// (never a wrong one). `log` is nil when nobody reads records.
        case cut(log: AccessLogRecord?)
    }

    /// The upstream side of the exchange.
    private enum Upstream: Equatable {
        /// Dialing (or taking from the pool); request parts wait in `buffered`.
        case connecting
        /// Carrying the exchange. `pooled`: it had served an earlier exchange.
        case attached(pooled: Bool)
        /// Gone (closed, failed, or handed back).
        case none
    }

    /// How far the origin's response has come.
    private enum Response {
        /// Nothing yet, or only interim (1xx) responses.
        case awaiting(sawBytes: Bool)
        /// The final head went to the client; its body is streaming.
        case streaming(ResponseFlow)
        case complete
    }

    /// The client's head and the head sent upstream, until the final response head: a retry
    /// sends the request again and the response is decided against the client's head. Then they
    /// go: both hold slices of the client's read buffer, which a long response must not pin.
    private var heads: (client: RequestHead, origin: RequestHead)?
    /// What the rest of the exchange needs of the request once its heads are gone.
    private let requestFraming: BodyFraming
    private let requestIsUpgrade: Bool
    private let clientIdempotent: Bool
    private let clientMinorVersion: Int
    private let target: RequestTarget
    /// Port and transport to the origin (TLS for https:// and tls-upgrade rules).
    private let route: UpstreamRoute
    private let started: NIODeadline
    /// The access-log record, filled in as the exchange goes.
    private(set) var record: AccessLogRecord
    private var upstream = Upstream.connecting
    private(set) var requestComplete = false
    /// Set when the request went to the parent proxy itself (absolute form).
    private var viaParent: ParentForward?
    private var response = Response.awaiting(sawBytes: false)
    /// Request parts that arrived before an upstream connection was ready.
    private var buffered: [RequestPart] = []
    /// While set, the upstream must make progress (take request bytes or send response bytes)
    /// within the upstream timeout, counted from this stamp. Moving it costs a store, not a timer.
    private var lastUpstreamActivity: NIODeadline?
    /// A request whose connection closed before any response byte is sent again once.
    private var retried = false

    init(clientHead: RequestHead, target: RequestTarget, route: UpstreamRoute, request: OriginRequest, record: AccessLogRecord, started: NIODeadline) {
        self.heads = (clientHead, request.head)
        self.requestFraming = request.framing
        self.requestIsUpgrade = request.isUpgrade
        self.clientIdempotent = clientHead.isIdempotent
        self.clientMinorVersion = clientHead.minorVersion
        self.target = target
        self.route = route
        self.record = record
        self.started = started
    }

    /// An upstream is being dialed (or taken from the pool) for the exchange.
    var isConnecting: Bool { upstream == .connecting }

    var isAttached: Bool {
        if case .attached = upstream { return true }
        return false
    }

    private var responseComplete: Bool {
        if case .complete = response { return true }
        return false
    }

    private var responseStarted: Bool {
        if case .awaiting = response { return false }
        return true
    }

    private var sawResponseBytes: Bool {
        if case .awaiting(let sawBytes) = response { return sawBytes }
        return true
    }

    /// Idempotent (RFC 9110 §9.2.2) and without a body: replaying it cannot do harm.
    private var isSafeToRetry: Bool {
        requestFraming == .none && !requestIsUpgrade && clientIdempotent
    }

    /// Whether the client may be read (no pipelined requests waiting).
    func readAllowed(upstreamWritable: Bool) -> Bool {
        // After an upgrade request the decoder has stopped parsing; more reads would only grow
        // its buffer until the origin answers.
        if requestComplete { return !requestIsUpgrade }
        switch upstream {
        case .connecting, .none: return buffered.isEmpty
        case .attached: return upstreamWritable
        }
    }

    // MARK: - the request

    mutating func requestBody(_ buffer: ByteBuffer, now: NIODeadline) -> Action {
        record.bytesUp += buffer.readableBytes
        guard case .attached = upstream else {
            buffered.append(.body(buffer))
            return .none
        }
        lastUpstreamActivity = now
        return .writeUpstream(.body(buffer))
    }

    mutating func requestEnd(_ trailers: HeaderFields?, now: NIODeadline) -> Action {
        requestComplete = true
        let forwarded = requestFraming == .chunked ? HeaderFields.forwardable(trailers) : nil
        guard case .attached = upstream else {
            buffered.append(.end(forwarded))
            return .none
        }
        lastUpstreamActivity = now
        return .writeUpstream(.end(forwarded))
    }

    // MARK: - the upstream connection

    /// An event of the upstream side. `closeAfterExchange`: the client connection closes after
    /// this exchange (read, and set when an upgrade is refused: the decoder stopped parsing after
    /// the upgrade request).
    mutating func upstream(
        _ event: consuming UpstreamEvent,
        now: NIODeadline,
        settings: borrowing ClientConnectionStateMachine.Settings,
        closeAfterExchange: inout Bool
    ) -> Action {
        switch consume event {
        case .dialed, .writabilityChanged: .none
        case .connected(let info): upstreamConnected(info, now: now)
        case .connectFailed(let error): fail(error, now: now, recordsEnabled: settings.recordsEnabled)
        case .closedBeforeUse(let dialed): upstreamClosedBeforeUse(dialed: dialed, now: now, recordsEnabled: settings.recordsEnabled)
        case .head(let head): upstreamHead(head, now: now, settings: settings, closeAfterExchange: &closeAfterExchange)
        case .body(let buffer): upstreamBody(buffer, now: now)
        case .end(let trailers): upstreamEnd(trailers, now: now, recordsEnabled: settings.recordsEnabled)
        case .closed(let reason, let dialed): upstreamClosed(reason, dialed: dialed, now: now, recordsEnabled: settings.recordsEnabled)
        }
    }

    /// An upstream connection is attached: the request goes out.
    private mutating func upstreamConnected(_ info: UpstreamConnectInfo, now: NIODeadline) -> Action {
        guard upstream == .connecting else { return Self.impossible("an upstream attached to an exchange that has one") }
        upstream = .attached(pooled: info.pooled)
        if info.pooled {
            record.reused = true
            record.source = "pool"
            record.dialedIP = info.dialedIP
        } else {
            record.dialedIP = info.dialedIP
            record.source = info.source
            record.resolveMs = info.resolveMs
            record.connectMs = info.connectMs
            record.tlsMs = info.tlsMs
            record.tlsResumed = info.tlsResumed
        }
        // The parts that waited go out behind the head; the array moves into the action.
        let parts = buffered
        buffered = []
        lastUpstreamActivity = now
        viaParent = info.parentForward
        guard let origin = heads?.origin else { return Self.impossible("an upstream attached after the response head") }
        if let forward = info.parentForward {
            // To the parent proxy itself: absolute form naming the address chosen, Host unchanged.
            return .sendRequest(origin.forParent(forward, pathAndQuery: target.pathAndQuery), buffered: parts)
        }
        return .sendRequest(origin, buffered: parts)
    }

    /// The connection made for the exchange closed before anything was sent on it. Nothing
    /// reached the origin, so any request, a POST with its buffered body too, is tried once more
    /// on a new connection that avoids the address; the second time it is a 502.
    private mutating func upstreamClosedBeforeUse(dialed: FailedAddress?, now: NIODeadline, recordsEnabled: Bool) -> Action {
        guard upstream == .connecting else { return Self.impossible("an unused upstream closed for an exchange that has one") }
        if !retried {
            retried = true
            lastUpstreamActivity = nil
            return .retry(route, blamed: dialed)
        }
        let error = ProxyError(.upstreamClosed, "\(target.host) closed the connection as soon as it was made")
        return fail(error, now: now, recordsEnabled: recordsEnabled, blamed: dialed)
    }

    /// The upstream connection closed; `dialed`: its address and the kind of failure its error
    /// says (nil when unknown).
    private mutating func upstreamClosed(_ reason: UpstreamCloseReason, dialed: FailedAddress?, now: NIODeadline, recordsEnabled: Bool) -> Action {
        guard case .attached(let pooled) = upstream else { return Self.impossible("an upstream closed that was not attached") }
        upstream = .none
        if responseComplete { return .none }
        // The origin broke HTTP framing: not the address's fault, and not worth a retry.
        switch reason {
        case .invalidResponse(let reason):
            return fail(ProxyError(.invalidResponse, "\(target.host) sent an invalid response: \(reason)"), now: now, recordsEnabled: recordsEnabled)
        case .unrelayableResponse(let reason):
            return fail(ProxyError.unrelayableResponse(reason), now: now, recordsEnabled: recordsEnabled)
        case .unaskedSwitch:
            return fail(ProxyError.unaskedSwitch(host: target.host), now: now, recordsEnabled: recordsEnabled)
        case .closed, .failed:
            break
        }
        var blame = false
        if !sawResponseBytes {
            // Closed or reset before any response byte. On a fresh connection, or with a reset, the
            // address is at fault: it goes into back-off and the retry avoids it. A pooled
            // connection closed cleanly is the keep-alive race (the origin dropped an idle
            // connection just as we reused it), which says nothing about the address.
            blame = !pooled || reason != .closed
            if !retried && isSafeToRetry {
                // Idempotent and bodiless: sent again once, on another address when there is one.
                retried = true
                record.reused = false
                lastUpstreamActivity = nil
                upstream = .connecting
                if requestComplete { buffered = [.end(nil)] }
                return .retry(route, blamed: blame ? dialed : nil)
            }
        }
        var detail = ""
        if case .failed(let why) = reason { detail = " (\(why))" }
        let error = ProxyError(
            .upstreamClosed,
            responseStarted
                ? "\(target.host) closed the connection mid-response\(detail)"
                : "\(target.host) closed the connection without answering\(detail)"
        )
        return fail(error, now: now, recordsEnabled: recordsEnabled, blamed: blame ? dialed : nil)
    }

    /// The connection's timer fired while the exchange runs.
    mutating func timerFired(now: NIODeadline, upstreamTimeout: TimeAmount, recordsEnabled: Bool) -> Action {
        guard let last = lastUpstreamActivity else { return .none }
        let due = last + upstreamTimeout
        if due > now { return .scheduleTimer(due) }
        let timeout = upstreamTimeout.milliseconds
        let error = ProxyError(
            .upstreamTimeout,
            responseStarted ? "\(target.host) stopped sending the response for \(timeout) ms" : "\(target.host) did not answer within \(timeout) ms"
        )
        return fail(error, now: now, recordsEnabled: recordsEnabled)
    }

    // MARK: - the response

    /// A response head from the origin: interim (1xx), the final one, or the 101 of an upgrade.
    private mutating func upstreamHead(
        _ head: ResponseHead,
        now: NIODeadline,
        settings: borrowing ClientConnectionStateMachine.Settings,
        closeAfterExchange: inout Bool
    ) -> Action {
        let code = head.statusCode
        if (100..<200).contains(code) && code != 101 {
            response = .awaiting(sawBytes: true)
            lastUpstreamActivity = now
            // Interim responses (100 Continue, 103 Early Hints) go to HTTP/1.1 clients as they are.
            guard clientMinorVersion >= 1 else { return .touched }
            return .writeClient(.head(head.interimForClient))
        }
        guard let clientHead = heads?.client else { return Self.impossible("a second final response head") }
        let wantsUpgrade = requestIsUpgrade
        let isUpgrade = wantsUpgrade && code == 101
        if wantsUpgrade && !isUpgrade {
            // The reader stopped after the upgrade request: what the client sends next is not
            // read as HTTP, so the connection closes after this response, and the client is told.
            closeAfterExchange = true
        }
        var forwarded: ClientResponse
        do throws(ProxyError) {
            if code == 101 && !isUpgrade {
                throw ProxyError.unaskedSwitch(host: target.host)
            }
            if code == 407, let parent = viaParent {
                // The parent's own challenge is not the client's to answer: this proxy's credentials for it are at fault.
                throw ProxyError(
                    .connectFailed,
                    parent.authorization == nil
                        ? "the parent proxy asks for credentials (407): put them in --parent-proxy http://user:password@host:port"
                        : "the parent proxy refused the credentials in --parent-proxy (407)")
            }
            forwarded = try head.forClient(
                of: clientHead,
                clientKeepAlive: clientHead.isKeepAlive && !closeAfterExchange,
                isUpgradeResponse: isUpgrade,
                via: settings.via
            )
        } catch {
            return fail(error, now: now, recordsEnabled: settings.recordsEnabled)
        }
        heads = nil
        if let field = settings.configuration.requestIDHeader, let id = record.requestID {
            // The client gets the id its request was logged and forwarded with.
            forwarded.head.replaceOrAddField(name: field, value: id)
        }
        record.status = code
        if settings.recordsEnabled {
            record.ttfbMs = (now - started).milliseconds
        }
        if isUpgrade {
            var tunnelRecord = record
            tunnelRecord.kind = .tunnel
            return .upgraded(forwarded.head, record: tunnelRecord, started: started)
        }
        let forwardedHead = forwarded.head
        response = .streaming(forwarded.flow)
        lastUpstreamActivity = now
        return .writeClient(.head(forwardedHead))
    }

    private mutating func upstreamBody(_ buffer: ByteBuffer, now: NIODeadline) -> Action {
        record.bytesDown += buffer.readableBytes
        lastUpstreamActivity = now
        return .writeClient(.body(buffer))
    }

    /// The response ended. With the request complete too, the exchange is over.
    private mutating func upstreamEnd(_ trailers: HeaderFields?, now: NIODeadline, recordsEnabled: Bool) -> Action {
        guard case .streaming(let flow) = response else { return Self.impossible("a response end before its head") }
        response = .complete
        lastUpstreamActivity = nil
        let kept = flow.clientFraming == .chunked ? HeaderFields.forwardable(trailers) : nil
        let log = finalRecord(now: now, recordsEnabled: recordsEnabled)
        guard requestComplete else {
            return .responseEnded(trailers: kept, upstream: .close, log: log, early: true, closeClient: true)
        }
        return .responseEnded(
            trailers: kept,
            upstream: flow.upstreamWillClose ? .close : .release,
            log: log,
            early: false,
            closeClient: flow.closeClient
        )
    }

    // MARK: - failure and the end

    /// Ends the exchange with `error`: an error response when nothing was sent yet, otherwise an
    /// abrupt close. Either way the upstream closes.
    mutating func fail(_ error: ProxyError, now: NIODeadline, recordsEnabled: Bool, blamed: FailedAddress? = nil) -> Action {
        lastUpstreamActivity = nil
        record.fail(error)
        if responseStarted {
            return .failed(error, .cut(log: finalRecord(now: now, recordsEnabled: recordsEnabled)), blamed: blamed)
        }
        var answered = record
        answered.status = error.statusCode
        answered.totalMs = (now - started).milliseconds
        return .failed(error, .answer(answered), blamed: blamed)
    }

    /// The client went away (`client_closed` or `client_error`): the record says so (a client that
    /// closed after the whole response came did no harm) and is final.
    mutating func clientLeft(_ reason: String, now: NIODeadline, recordsEnabled: Bool) -> AccessLogRecord? {
        let closed = reason == "client_closed"
        if !closed || !responseComplete {
            record.abort(reason, message: closed ? "client closed the connection" : "client connection error")
        }
        return finalRecord(now: now, recordsEnabled: recordsEnabled)
    }

    /// The record to log for a finished exchange, or nil when nobody reads records.
    private func finalRecord(now: NIODeadline, recordsEnabled: Bool) -> AccessLogRecord? {
        guard recordsEnabled else { return nil }
        var final = record
        final.totalMs = (now - started).milliseconds
        return final
    }

    /// An event that cannot happen in this state: a bug in the handler or the machines. Debug
    /// builds stop here; release builds ignore the event.
    private static func impossible(_ what: String, file: StaticString = #fileID, line: UInt = #line) -> Action {
        assertionFailure("impossible transition: \(what)", file: file, line: line)
        return .none
    }
}

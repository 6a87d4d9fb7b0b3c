import NIOCore
import NIOHTTP1
import ProxyConfig

/// Every decision of one client connection, with no channel, context or I/O: which request is
/// served (pipelined ones wait, in order), when the upstream is dialed, retried or released, what
/// the client is answered, when reading stops (backpressure), the deadlines of the connection's
/// single timer, and the switch to a tunnel (CONNECT, upgrades). `ClientConnectionHandler` turns
/// NIO events into calls here and runs the `ClientConnectionAction`s that come back.
struct ClientConnectionStateMachine {
    /// What the machine needs to know of the proxy's configuration.
    struct Settings {
        var configuration: ProxyConfiguration
        var via: ViaHeader
        /// The client's address as logged.
        var client: String
        /// Build access-log records (paths, timings) only when someone reads them.
        var accessLogEnabled: Bool
    }

    /// Waiting between requests.
    enum Wait: Equatable {
        /// For the next request on a kept-alive connection: closed silently at the deadline.
        case nextRequest(NIODeadline)
        /// For the rest of a head whose first bytes arrived: 408 at the deadline.
        case requestHead(NIODeadline)

        var deadline: NIODeadline {
            switch self {
            case .nextRequest(let deadline), .requestHead(let deadline): deadline
            }
        }
    }

    enum State {
        /// No request in progress.
        case idle(Wait)
        /// A request in progress: its data is `current` (kept out of the enum, so that events
        /// mutate it in place instead of copying it out and back).
        case exchange
        /// A CONNECT target is being dialed; nothing is read meanwhile.
        case connectingTunnel(record: AccessLogRecord, started: NIODeadline)
        /// The HTTP handlers are being removed; raw client bytes wait here for the tunnel.
        case switchingProtocols(buffered: [NIOAny])
        /// Answered for the last time: nothing more is read or answered.
        case closing
        case closed
    }

    var settings: Settings
    var state: State {
        didSet {
            if case .exchange = state { return }
            current = nil
        }
    }
    /// The exchange in progress; set exactly while `state` is `.exchange`.
    var current: ExchangeState?
    /// Request parts read while an earlier request was still being served (pipelining).
    private(set) var queued = CircularBuffer<HTTPServerRequestPart>()
    /// The connection closes after the current exchange (client asked, HTTP/1.0, draining, an
    /// upgrade refused after the decoder stopped parsing).
    var closeAfterExchange = false
    /// NIO asked to read while reading was not allowed.
    private var pendingRead = false
    /// When the connection's one timer is due, if it is scheduled.
    private(set) var timerDeadline: NIODeadline?
    /// The upstream channel can take more bytes.
    var upstreamWritable = true
    /// Counts exchanges, so a connect that completes for an earlier exchange is recognised.
    private(set) var exchangeNumber = 0

    init(settings: Settings, now: NIODeadline) {
        self.settings = settings
        self.state = .idle(.nextRequest(now + settings.configuration.clientIdleTimeout))
    }

    // The configuration is read as `settings.configuration.field`: a stored-property path, not a
    // copy of the whole (large) struct per event.

    // MARK: - timers

    /// The connection became active (or was set up active): its idle deadline starts now. A
    /// connection accepted after shutdown began (it raced the listener's close) never saw the
    /// quiesce event: it is quiesced at once.
    mutating func activated(now: NIODeadline, draining: Bool) -> ClientConnectionAction {
        guard case .idle = state else { return .none }
        if draining { return quiesce() }
        return becomeIdle(now: now)
    }

    private mutating func becomeIdle(now: NIODeadline) -> ClientConnectionAction {
        let deadline = now + settings.configuration.clientIdleTimeout
        state = .idle(.nextRequest(deadline))
        return scheduleTimer(by: deadline).map { .scheduleTimer($0) } ?? .none
    }

    /// The deadline the timer must be scheduled for, or nil when it already fires by then.
    /// Deadlines only move later between firings, so a busy connection costs no timer operation.
    mutating func scheduleTimer(by deadline: NIODeadline) -> NIODeadline? {
        if let pending = timerDeadline, pending <= deadline { return nil }
        timerDeadline = deadline
        return deadline
    }

    /// The first raw bytes of a request arrived: the head must be complete within the header timeout.
    mutating func requestBytesArrived(now: NIODeadline) -> ClientConnectionAction {
        guard case .idle = state, queued.isEmpty else { return .none }
        let deadline = now + settings.configuration.headerTimeout
        state = .idle(.requestHead(deadline))
        return scheduleTimer(by: deadline).map { .scheduleTimer($0) } ?? .none
    }

    mutating func timerFired(now: NIODeadline) -> ClientConnectionAction {
        timerDeadline = nil
        switch state {
        case .idle(let wait):
            if wait.deadline > now {
                timerDeadline = wait.deadline
                return .scheduleTimer(wait.deadline)
            }
            switch wait {
            case .nextRequest:
                state = .closed
                return .close(closeUpstream: false, log: nil)
            case .requestHead:
                return failConnection(
                    ProxyError(.requestTimeout, "the request head was not received within \(settings.configuration.headerTimeout.milliseconds) ms"),
                    now: now
                )
            }
        case .exchange:
            guard var exchange = current, let last = exchange.lastUpstreamActivity else { return .none }
            let due = last + settings.configuration.upstreamTimeout
            if due > now {
                timerDeadline = due
                return .scheduleTimer(due)
            }
            exchange.lastUpstreamActivity = nil
            let timeout = settings.configuration.upstreamTimeout.milliseconds
            let error = ProxyError(
                .upstreamTimeout,
                exchange.responseStarted
                    ? "\(exchange.target.host) stopped sending the response for \(timeout) ms"
                    : "\(exchange.target.host) did not answer within \(timeout) ms"
            )
            return failExchange(exchange, error, now: now)
        case .connectingTunnel, .switchingProtocols, .closing, .closed:
            return .none
        }
    }

    /// Moves the current exchange's upstream-activity stamp; returns the timer deadline to
    /// schedule, if any.
    mutating func touchUpstream(now: NIODeadline) -> NIODeadline? {
        current?.lastUpstreamActivity = now
        return scheduleTimer(by: now + settings.configuration.upstreamTimeout)
    }

    // MARK: - reading (backpressure)

    /// Whether the client side may be read now.
    var readAllowed: Bool {
        switch state {
        case .idle:
            return queued.isEmpty
        case .exchange:
            // Read in place (`current!.field`): binding the whole exchange would copy it.
            guard queued.isEmpty, current != nil else { return false }
            // After an upgrade request the decoder has stopped parsing; more reads would only
            // grow its buffer until the origin answers.
            if current!.requestComplete { return !current!.request.isUpgrade }
            switch current!.upstream {
            case .connecting, .none: return current!.buffered.isEmpty
            case .attached: return upstreamWritable
            }
        case .switchingProtocols:
            return true
        case .connectingTunnel, .closing, .closed:
            return false
        }
    }

    /// NIO asks to read: true to read now; otherwise the read is remembered.
    mutating func readRequested() -> Bool {
        if readAllowed { return true }
        pendingRead = true
        return false
    }

    /// A remembered read that may go ahead now (asked after every action).
    mutating func takePendingRead() -> Bool {
        guard pendingRead, readAllowed else { return false }
        pendingRead = false
        return true
    }

    mutating func upstreamWritabilityChanged(_ writable: Bool) {
        upstreamWritable = writable
    }

    // MARK: - client events

    /// A decoded request part. Parts of a request that must wait (pipelining) are queued.
    mutating func requestPart(_ part: HTTPServerRequestPart, now: NIODeadline, draining: Bool) -> ClientConnectionAction {
        switch state {
        case .closing, .closed, .connectingTunnel, .switchingProtocols:
            // Nothing more is served: after an answer that closes, after a CONNECT head (only its
            // `.end` comes), during a switch (raw bytes come through `rawBytes`).
            return .none
        case .exchange where current?.requestComplete == true:
            queued.append(part)
            return .none
        case .idle where !queued.isEmpty:
            queued.append(part)
            return .none
        case .idle, .exchange:
            return handle(part, now: now, draining: draining)
        }
    }

    /// The next queued part that may be handled now, if any (the handler feeds it back through
    /// `handleQueued`).
    mutating func nextQueuedPart() -> HTTPServerRequestPart? {
        switch state {
        case .idle:
            return queued.popFirst()
        case .exchange where current?.requestComplete == false:
            return queued.popFirst()
        default:
            return nil
        }
    }

    mutating func handleQueued(_ part: HTTPServerRequestPart, now: NIODeadline, draining: Bool) -> ClientConnectionAction {
        handle(part, now: now, draining: draining)
    }

    private mutating func handle(_ part: HTTPServerRequestPart, now: NIODeadline, draining: Bool) -> ClientConnectionAction {
        switch part {
        case .head(let head):
            return startRequest(head, now: now, draining: draining)
        case .body(let buffer):
            guard current != nil else { return .none }
            current!.record.bytesUp += buffer.readableBytes
            if case .attached = current!.upstream {
                return .writeUpstream(.body(.byteBuffer(buffer)), timer: touchUpstream(now: now))
            }
            current!.buffered.append(part)
            return .none
        case .end(let trailers):
            guard current != nil else { return .none }
            current!.requestPhase = .complete
            let forwarded = current!.request.framing == .chunked ? MessageFraming.forwardableTrailers(trailers) : nil
            if case .attached = current!.upstream {
                return .writeUpstream(.end(forwarded), timer: touchUpstream(now: now))
            }
            current!.buffered.append(.end(forwarded))
            return .none
        }
    }

    /// The raw client bytes that arrive while the HTTP handlers are being removed.
    mutating func rawBytes(_ buffer: NIOAny) {
        guard case .switchingProtocols(var buffered) = state else { return }
        buffered.append(buffer)
        state = .switchingProtocols(buffered: buffered)
    }

    /// The switch is done: the bytes to replay towards the origin; the machine's work is over.
    mutating func tunnelInstalled() -> [NIOAny] {
        guard case .switchingProtocols(let buffered) = state else { return [] }
        state = .closed
        return buffered
    }

    private mutating func startRequest(_ head: HTTPRequestHead, now: NIODeadline, draining: Bool) -> ClientConnectionAction {
        if head.method == .CONNECT {
            return startTunnel(head, now: now)
        }
        var record = AccessLogRecord(kind: .request, client: settings.client, method: head.method.rawValue)
        let target: RequestTarget
        let rewritten: MessageRewriter.RewrittenRequest
        do throws(ProxyError) {
            guard head.uri.utf8.count <= MessageFraming.maxRequestTargetLength else {
                throw ProxyError(
                    .uriTooLong,
                    "the request target is \(head.uri.utf8.count) bytes long; the limit is \(MessageFraming.maxRequestTargetLength)"
                )
            }
            target = try RequestTarget.parseAbsolute(head.uri)
            record.scheme = target.scheme.rawValue
            record.host = target.host
            record.port = target.port
            if settings.accessLogEnabled {
                record.path = String(target.pathAndQuery.utf8.prefix { $0 != UInt8(ascii: "?") }) ?? target.pathAndQuery
            }
            if MessageRewriter.viaContains(head.headers, pseudonym: settings.via.pseudonym) {
                throw ProxyError.loop(head.headers[canonicalForm: "via"].joined(separator: ", "))
            }
            rewritten = try MessageRewriter.rewriteRequest(head, target: target, via: settings.via)
        } catch {
            record.error = error.message
            if record.host.isEmpty {
                (record.host, record.port, record.path) = RequestTarget.loggable(head.uri)
                if !settings.accessLogEnabled { record.path = "" }
            }
            return respond(error, record: record, started: now, now: now)
        }
        if (head.method == .TRACE || head.method == .OPTIONS) && MessageRewriter.maxForwards(head.headers) == 0 {
            // RFC 9110 §7.6.2: the last recipient answers.
            record.status = 200
            state = .closing
            return .respondLocally(LocalAnswer.forMaxForwardsZero(head, via: settings.via), record: record)
        }

        let route = UpstreamRoute.forRequest(target, configuration: settings.configuration)
        record.tls = route.tls != nil
        if !head.isKeepAlive || draining { closeAfterExchange = true }
        exchangeNumber += 1
        state = .exchange
        current = ExchangeState(clientHead: head, target: target, route: route, request: rewritten, record: record, started: now)
        return .connectUpstream(route, avoiding: [], allowPooled: true)
    }

    private mutating func startTunnel(_ head: HTTPRequestHead, now: NIODeadline) -> ClientConnectionAction {
        var record = AccessLogRecord(kind: .tunnel, client: settings.client, method: "CONNECT")
        let target: RequestTarget
        do throws(ProxyError) {
            target = try RequestTarget.parseConnectAuthority(head.uri)
            record.scheme = "tcp"
            record.host = target.host
            record.port = target.port
            let allowedPorts = settings.configuration.connectPorts
            guard allowedPorts.contains(target.port) else {
                throw ProxyError.connectPortDenied(target.port, allowed: allowedPorts)
            }
            if MessageRewriter.viaContains(head.headers, pseudonym: settings.via.pseudonym) {
                throw ProxyError.loop(head.headers[canonicalForm: "via"].joined(separator: ", "))
            }
        } catch {
            record.error = error.message
            return respond(error, record: record, started: now, now: now)
        }
        state = .connectingTunnel(record: record, started: now)
        return .connectTunnel(target)
    }

    /// The client's decoder rejected its bytes.
    mutating func parseError(_ error: HTTPParserError, requestLineLength: Int, now: NIODeadline) -> ClientConnectionAction {
        let proxyError = RequestParseFailure.proxyError(for: error, requestLineLength: requestLineLength)
        switch state {
        case .closing, .closed, .switchingProtocols, .connectingTunnel:
            // Already answered (or past HTTP): bytes after a rejected request get no second answer.
            return .none
        case .exchange:
            guard var exchange = current else { return .none }
            guard exchange.responseStarted else { return failExchange(exchange, proxyError, now: now) }
            // Too late for an answer of our own: the client sees a truncated response.
            exchange.record.error = proxyError.message
            state = .closing
            return .close(closeUpstream: true, log: finalRecord(exchange, now: now))
        case .idle:
            return failConnection(proxyError, now: now)
        }
    }

    /// A read or write error on the client connection: nothing useful can be said to the client.
    mutating func clientError(now: NIODeadline) -> ClientConnectionAction {
        switch state {
        case .closed:
            return .none
        case .exchange:
            guard var exchange = current else { return .none }
            if exchange.record.error == nil { exchange.record.error = "client connection error" }
            state = .closed
            return .close(closeUpstream: true, log: finalRecord(exchange, now: now))
        default:
            state = .closed
            return .close(closeUpstream: false, log: nil)
        }
    }

    /// The client connection is gone.
    mutating func clientClosed(now: NIODeadline) -> ClientConnectionAction {
        queued.removeAll()
        defer { state = .closed }
        guard case .exchange = state, var exchange = current else { return .none }
        if exchange.record.error == nil && !exchange.responseComplete {
            exchange.record.error = "client closed the connection"
        }
        return .close(closeUpstream: true, log: finalRecord(exchange, now: now))
    }

    /// Shutdown asks the connection to finish: after the current exchange, or now when idle.
    mutating func quiesce() -> ClientConnectionAction {
        closeAfterExchange = true
        guard case .idle = state, queued.isEmpty else { return .none }
        // Idle for us, but the last response may still be queued behind a slow reader.
        state = .closing
        return .closeAfterLastWrite
    }

    // MARK: - answers

    /// Answers `error` and closes: the request body (if any) was not consumed, so the connection
    /// cannot carry another request.
    private mutating func respond(_ error: ProxyError, record: AccessLogRecord, started: NIODeadline, now: NIODeadline)
        -> ClientConnectionAction
    {
        var record = record
        record.status = Int(error.status.code)
        record.totalMs = (now - started).milliseconds
        queued.removeAll()
        state = .closing
        return .respondWithError(error, record: record, closeUpstream: false)
    }

    /// An error with no exchange to blame (a timeout before any head, a head the decoder rejected).
    private mutating func failConnection(_ error: ProxyError, now: NIODeadline) -> ClientConnectionAction {
        var record = AccessLogRecord(kind: .request, client: settings.client, method: "-")
        record.error = error.message
        return respond(error, record: record, started: now, now: now)
    }

    /// Ends the exchange with `error`: an error response when nothing was sent yet, otherwise an
    /// abrupt close (the client sees a truncated response, never a wrong one). The upstream closes.
    mutating func failExchange(_ exchange: ExchangeState, _ error: ProxyError, now: NIODeadline) -> ClientConnectionAction {
        var exchange = exchange
        exchange.lastUpstreamActivity = nil
        exchange.record.error = error.message
        if exchange.responseStarted {
            state = .closing
            return .close(closeUpstream: true, log: finalRecord(exchange, now: now))
        }
        var record = exchange.record
        record.status = Int(error.status.code)
        record.totalMs = (now - exchange.started).milliseconds
        queued.removeAll()
        state = .closing
        return .respondWithError(error, record: record, closeUpstream: true)
    }

    /// The current exchange's record to log (nil when nobody reads the access log), copying the
    /// record only.
    func currentRecord(now: NIODeadline) -> AccessLogRecord? {
        guard settings.accessLogEnabled, current != nil else { return nil }
        var record = current!.record
        record.totalMs = (now - current!.started).milliseconds
        return record
    }

    /// The record to log for a finished exchange, or nil when nobody reads the access log.
    func finalRecord(_ exchange: ExchangeState, now: NIODeadline) -> AccessLogRecord? {
        guard settings.accessLogEnabled else { return nil }
        var record = exchange.record
        record.totalMs = (now - exchange.started).milliseconds
        return record
    }
}

@available(*, unavailable)
extension ClientConnectionStateMachine: Sendable {}

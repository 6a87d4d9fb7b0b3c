import NIOCore
import NIOHTTP1
import ProxyAccess
import ProxyConfig
import ProxyHTTP
import ProxyKit

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
        /// Build records (timings, statuses) only when someone reads them: the access log or metrics.
        var recordsEnabled: Bool
        /// Every request must carry verified Basic proxy credentials (`--proxy-auth`).
        var requiresAuthentication = false
        /// Records carry paths (only the access log shows them).
        var logsPaths = true
        /// The connection's id, the first half of its requests' ids (`RequestID`).
        var connectionID: UInt64 = 0
    }

    /// Pipelined requests read ahead of the one being served: from this many on (or this many
    /// queued body bytes) the handler stops feeding the decoder and stops reading the socket
    /// (`readAheadFull`), so the client is slowed down by TCP instead of refused.
    static let readAheadRequests = 16
    static let readAheadBodyBytes = 256 << 10
    /// Hard bounds of the queue. Reading stops at the read-ahead marks above, and what is parsed
    /// past them is one receive buffer (64 KiB at most: a few thousand of the smallest requests),
    /// so these are reached only by what cannot be held back; then the next request is answered
    /// 503 (in order, after the queued ones) and the connection closes.
    static let maxQueuedRequests = 8_192
    static let maxQueuedBodyBytes = 1 << 20

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
        /// A request in progress. Events move the exchange out of the state (`takeExchange`),
        /// mutate it in place and put it back (`putBack`) unless they ended it.
        case exchange(ExchangeState)
        /// The request's credentials are being verified (off the event loop); nothing is read
        /// meanwhile and parts that arrive are queued.
        case authenticating(HTTPRequestHead, started: NIODeadline)
        /// A request was refused (407) on a connection that stays open: its remaining parts (only
        /// its end: a refused request with a body closes instead) are dropped.
        case discardingRefusedRequest
        /// A CONNECT target is being dialed; nothing is read meanwhile.
        case connectingTunnel(record: AccessLogRecord, started: NIODeadline)
        /// Becoming a tunnel (CONNECT answered, or an upgrade accepted): the HTTP handlers are
        /// being removed, then the glue installed; raw client bytes wait here for the tunnel.
        case switchingProtocols(TunnelSwitchState)
        /// Answered for the last time: nothing more is read or answered.
        case closing
        case closed
        /// Only while an event holds the exchange it took out of `.exchange`.
        case modifying
    }

    var settings: Settings
    /// Set only by the machine's own files (this one and +Upstream: Swift's `private` would not
    /// reach the extension in the other file); the handler and tests only read it.
    var state: State
    /// The exchange in progress (a copy: for reading only).
    var current: ExchangeState? {
        if case .exchange(let exchange) = state { return exchange }
        return nil
    }
    /// Request parts read while an earlier request was still being served (pipelining).
    private(set) var queued = CircularBuffer<HTTPServerRequestPart>()
    /// Request heads and body bytes in `queued`.
    private var queuedRequests = 0
    private var queuedBodyBytes = 0
    /// More was read ahead than the queue takes: after the queued requests, 503 and close.
    private(set) var queueOverflowed = false
    /// The `Proxy-Authorization` value last verified on this connection and its user: a
    /// kept-alive client repeats it on every request, which then costs one string comparison.
    private var verifiedCredentials: (field: String, user: String)?
    /// The connection closes after the current exchange (client asked, HTTP/1.0, draining, an
    /// upgrade refused after the decoder stopped parsing).
    var closeAfterExchange = false
    /// NIO asked to read while reading was not allowed.
    private var pendingRead = false
    /// When the connection's one timer is due, if it is scheduled.
    private(set) var timerDeadline: NIODeadline?
    /// The upstream channel can take more bytes.
    var upstreamWritable = true
    /// The client channel can take more bytes: the upstream is read only while it can.
    private(set) var clientWritable = true
    /// A reloaded configuration, taken when the next request starts.
    private var offeredSettings: (configuration: ProxyConfiguration, requiresAuthentication: Bool)?
    /// Counts exchanges, so a connect that completes for an earlier exchange is recognised.
    private(set) var exchangeNumber = 0
    /// Counts request heads (refused ones too): the second half of each request's id.
    private var requestsSeen = 0

    init(settings: Settings, now: NIODeadline) {
        self.settings = settings
        self.state = .idle(.nextRequest(now + settings.configuration.clientIdleTimeout))
    }

    /// A reload's configuration: it applies from the next request on (the machine takes it when
    /// that request's head starts, also for a pipelined head served from the queue). A credential
    /// verified under the old users is checked again.
    mutating func reloaded(configuration: ProxyConfiguration, requiresAuthentication: Bool) {
        offeredSettings = (configuration, requiresAuthentication)
    }

    private mutating func takeOfferedSettings() {
        guard let offered = offeredSettings.take() else { return }
        settings.configuration = offered.configuration
        settings.requiresAuthentication = offered.requiresAuthentication
        verifiedCredentials = nil
    }

    // The configuration is read as `settings.configuration.field`: a stored-property path, not a
    // copy of the whole (large) struct per event.

    // MARK: - timers

    /// The connection became active (or was set up active): its idle deadline starts now. A
    /// connection accepted after shutdown began (it raced the listener's close) never saw the
    /// quiesce event: it is quiesced at once.
    mutating func activated(now: NIODeadline, draining: Bool, admission: ClientAdmission.Verdict = .admitted) -> ClientConnectionAction {
        guard case .idle = state else { return .none }
        // Refused before anything is read: the answer goes out, the connection closes.
        if let refusal = admission.error { return failConnection(refusal, now: now) }
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
        case .exchange(let exchange):
            guard let last = exchange.lastUpstreamActivity else { return .none }
            let due = last + settings.configuration.upstreamTimeout
            if due > now {
                timerDeadline = due
                return .scheduleTimer(due)
            }
            let timeout = settings.configuration.upstreamTimeout.milliseconds
            let error = ProxyError(
                .upstreamTimeout,
                exchange.responseStarted
                    ? "\(exchange.target.host) stopped sending the response for \(timeout) ms"
                    : "\(exchange.target.host) did not answer within \(timeout) ms"
            )
            return failExchange(exchange, error, now: now)
        case .authenticating, .discardingRefusedRequest, .connectingTunnel, .switchingProtocols, .closing, .closed:
            return .none
        case .modifying:
            return Self.impossible("timer fired while an event held the exchange")
        }
    }

    /// Moves the exchange's upstream-activity stamp; returns the timer deadline to schedule, if any.
    mutating func touchUpstream(_ exchange: inout ExchangeState, now: NIODeadline) -> NIODeadline? {
        exchange.lastUpstreamActivity = now
        return scheduleTimer(by: now + settings.configuration.upstreamTimeout)
    }

    // MARK: - the exchange, mutated in place

    /// Moves the exchange in progress out of the state (nil when there is none): `swap` moves it,
    /// so mutating it copies nothing. The caller ends the exchange by setting another state, or
    /// keeps it with `putBack`.
    mutating func takeExchange() -> ExchangeState? {
        guard case .exchange = state else { return nil }
        var taken = State.modifying
        swap(&taken, &state)
        guard case .exchange(let exchange) = consume taken else { return nil }
        return exchange
    }

    /// Puts a taken exchange back, unless the event moved the machine on (ended the exchange).
    mutating func putBack(_ exchange: consuming ExchangeState) {
        if case .modifying = state { state = .exchange(exchange) }
    }

    /// An event that cannot happen in this state: a bug in the handler or the machine. Debug
    /// builds stop here; release builds ignore the event (the connection goes on as it was).
    static func impossible(_ what: String, file: StaticString = #fileID, line: UInt = #line) -> ClientConnectionAction {
        assertionFailure("impossible transition: \(what)", file: file, line: line)
        return .none
    }

    // MARK: - reading (backpressure)

    /// The queue of pipelined requests is at its read-ahead mark: no more bytes for the decoder.
    var readAheadFull: Bool {
        queuedRequests >= Self.readAheadRequests || queuedBodyBytes >= Self.readAheadBodyBytes
    }

    /// Whether the client side may be read now.
    var readAllowed: Bool {
        switch state {
        case .idle:
            return queued.isEmpty
        case .exchange(let exchange):
            guard queued.isEmpty else { return false }
            // After an upgrade request the decoder has stopped parsing; more reads would only
            // grow its buffer until the origin answers.
            if exchange.requestComplete { return !exchange.request.isUpgrade }
            switch exchange.upstream {
            case .connecting, .none: return exchange.buffered.isEmpty
            case .attached: return upstreamWritable
            }
        case .switchingProtocols:
            return true
        case .discardingRefusedRequest:
            return queued.isEmpty
        case .authenticating, .connectingTunnel, .closing, .closed, .modifying:
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

    /// The client channel's writability changed: the upstream of the exchange is read only while
    /// the client can take what it sends (backpressure towards the origin).
    mutating func clientWritabilityChanged(_ writable: Bool) -> ClientConnectionAction {
        clientWritable = writable
        guard case .exchange(let exchange) = state, case .attached = exchange.upstream else { return .none }
        return .upstreamReads(allowed: writable)
    }

    // MARK: - client events

    /// A decoded request part. Parts of a request that must wait (pipelining) are queued.
    mutating func requestPart(_ part: HTTPServerRequestPart, now: NIODeadline, draining: Bool) -> ClientConnectionAction {
        switch state {
        case .closing, .closed, .connectingTunnel, .switchingProtocols:
            // Nothing more is served: after an answer that closes, after a CONNECT head (only its
            // `.end` comes), during a switch (raw bytes come through `rawBytes`).
            return .none
        case .exchange(let exchange) where exchange.requestComplete:
            enqueue(part)
            return .none
        case .authenticating:
            // The parts of the request being checked wait here; nothing more is read meanwhile,
            // so this holds at most one read event. Past the bound the request is refused (its
            // own parts must never be dropped from the queue).
            if case .body(let buffer) = part, queuedBodyBytes + buffer.readableBytes > Self.maxQueuedBodyBytes {
                return failConnection(
                    ProxyError(.overloaded, "more than \(Self.maxQueuedBodyBytes) body bytes arrived before the credentials were checked"),
                    now: now)
            }
            enqueue(part)
            return .none
        case .idle where !queued.isEmpty, .discardingRefusedRequest where !queued.isEmpty:
            enqueue(part)
            return .none
        case .idle, .exchange, .discardingRefusedRequest:
            return handle(part, now: now, draining: draining)
        case .modifying:
            return Self.impossible("a request part while an event held the exchange")
        }
    }

    /// Queues a part read ahead, within the queue's bounds; past them the rest is dropped and the
    /// connection ends after the queued requests (`queueDrained`).
    private mutating func enqueue(_ part: HTTPServerRequestPart) {
        guard !queueOverflowed else { return }
        switch part {
        case .head:
            guard queuedRequests < Self.maxQueuedRequests else {
                queueOverflowed = true
                return
            }
            queuedRequests += 1
        case .body(let buffer):
            guard queuedBodyBytes + buffer.readableBytes <= Self.maxQueuedBodyBytes else {
                // The request whose body overflowed cannot be served whole: drop it from the queue.
                queueOverflowed = true
                dropLastQueuedRequest()
                return
            }
            queuedBodyBytes += buffer.readableBytes
        case .end:
            break
        }
        queued.append(part)
    }

    private mutating func dropLastQueuedRequest() {
        while let part = queued.popLast() {
            noteDequeued(part)
            if case .head = part { return }
        }
    }

    private mutating func noteDequeued(_ part: HTTPServerRequestPart) {
        switch part {
        case .head: queuedRequests -= 1
        case .body(let buffer): queuedBodyBytes -= buffer.readableBytes
        case .end: break
        }
    }

    private mutating func clearQueue() {
        queued.removeAll()
        (queuedRequests, queuedBodyBytes) = (0, 0)
    }

    private mutating func dequeue() -> HTTPServerRequestPart? {
        guard let part = queued.popFirst() else { return nil }
        noteDequeued(part)
        return part
    }

    /// After the handler fed back the queued parts: when the queue had overflowed and everything
    /// before the overflow is answered, the next request gets 503 and the connection closes.
    mutating func queueDrained(now: NIODeadline) -> ClientConnectionAction {
        guard queueOverflowed, queued.isEmpty, case .idle = state else { return .none }
        return failConnection(
            ProxyError(.overloaded, "more than \(Self.maxQueuedRequests) pipelined requests (or \(Self.maxQueuedBodyBytes) body bytes) were sent ahead; send the rest again"),
            now: now
        )
    }

    /// The next queued part that may be handled now, if any (the handler feeds it back through
    /// `handleQueued`).
    mutating func nextQueuedPart() -> HTTPServerRequestPart? {
        switch state {
        case .idle, .discardingRefusedRequest:
            return dequeue()
        case .exchange(let exchange) where !exchange.requestComplete:
            return dequeue()
        default:
            return nil
        }
    }

    mutating func handleQueued(_ part: HTTPServerRequestPart, now: NIODeadline, draining: Bool) -> ClientConnectionAction {
        handle(part, now: now, draining: draining)
    }

    /// Serves the next queued part that may be handled now; nil when none may.
    mutating func serveQueued(now: NIODeadline, draining: Bool) -> ClientConnectionAction? {
        guard let part = nextQueuedPart() else { return nil }
        return handle(part, now: now, draining: draining)
    }

    private mutating func handle(_ part: HTTPServerRequestPart, now: NIODeadline, draining: Bool) -> ClientConnectionAction {
        if case .discardingRefusedRequest = state {
            guard case .end = part else { return .none }
            if closeAfterExchange {
                state = .closing
                return .closeAfterLastWrite
            }
            return becomeIdle(now: now)
        }
        switch part {
        case .head(let head):
            return startRequest(head, now: now, draining: draining)
        case .body(let buffer):
            guard var exchange = takeExchange() else { return Self.impossible("a request body outside an exchange") }
            defer { putBack(exchange) }
            exchange.record.bytesUp += buffer.readableBytes
            if case .attached = exchange.upstream {
                return .writeUpstream(.body(.byteBuffer(buffer)), timer: touchUpstream(&exchange, now: now))
            }
            exchange.buffered.append(part)
            return .none
        case .end(let trailers):
            guard var exchange = takeExchange() else { return Self.impossible("a request end outside an exchange") }
            defer { putBack(exchange) }
            exchange.requestPhase = .complete
            let forwarded = exchange.request.framing == .chunked ? MessageFraming.forwardableTrailers(trailers) : nil
            if case .attached = exchange.upstream {
                return .writeUpstream(.end(forwarded), timer: touchUpstream(&exchange, now: now))
            }
            exchange.buffered.append(.end(forwarded))
            return .none
        }
    }

    private mutating func startRequest(_ head: HTTPRequestHead, now: NIODeadline, draining: Bool) -> ClientConnectionAction {
        takeOfferedSettings()
        guard settings.requiresAuthentication else {
            return startAuthorizedRequest(head, user: nil, started: now, now: now, draining: draining)
        }
        // Before anything else: an unauthenticated client learns nothing of targets or resolution.
        if let verified = verifiedCredentials {
            let fields = head.headers[canonicalForm: "proxy-authorization"]
            if fields.count == 1, fields[0] == verified.field {
                return startAuthorizedRequest(head, user: verified.user, started: now, now: now, draining: draining)
            }
        }
        switch ProxyCredentials.parse(head.headers) {
        case .missing:
            return refuseCredentials(head, why: "send Basic credentials in Proxy-Authorization", user: nil, now: now, draining: draining)
        case .malformed(let why):
            return refuseCredentials(head, why: why, user: nil, now: now, draining: draining)
        case .basic(let credentials):
            state = .authenticating(head, started: now)
            return .authenticate(credentials)
        }
    }

    /// The verdict on the credentials of the request in `.authenticating`.
    mutating func credentialsChecked(_ verdict: ProxyAuthenticator.Verdict, now: NIODeadline, draining: Bool) -> ClientConnectionAction {
        guard case .authenticating(let head, let started) = state else { return .none }
        switch verdict {
        case .allowed(let user):
            if let field = head.headers.first(name: "proxy-authorization") { verifiedCredentials = (field, user) }
            return startAuthorizedRequest(head, user: user, started: started, now: now, draining: draining)
        case .denied(let user, _):
            return refuseCredentials(head, why: "the credentials for user '\(ProxyError.sanitized(user, limit: 64))' are not valid", user: user, now: now, draining: draining)
        case .busy:
            var record = record(for: head, logsPaths: settings.recordsEnabled && settings.logsPaths)
            let error = ProxyError(.overloaded, "too many proxy credential checks in progress")
            record.fail(error)
            return respond(error, record: record, started: started, now: now)
        }
    }

    /// 407. The connection stays open for the client's next try when the refused request has no
    /// body and the decoder still parses (not after CONNECT or an upgrade, where it stops).
    private mutating func refuseCredentials(_ head: HTTPRequestHead, why: String, user: String?, now: NIODeadline, draining: Bool)
        -> ClientConnectionAction
    {
        let error = ProxyError.proxyAuthRequired(why)
        var record = record(for: head, logsPaths: settings.recordsEnabled && settings.logsPaths)
        record.user = user
        record.fail(error)
        record.status = Int(error.status.code)
        let keepAlive = head.isKeepAlive && !draining && !closeAfterExchange && head.method != .CONNECT
            && !head.headers.contains(name: "upgrade") && !MessageFraming.mayHaveBody(head.headers)
        if keepAlive {
            state = .discardingRefusedRequest
        } else {
            clearQueue()
            state = .closing
        }
        return .refuseCredentials(error, record: record, keepAlive: keepAlive)
    }

    /// A record for a request refused before its target was parsed.
    private mutating func record(for head: HTTPRequestHead, logsPaths: Bool) -> AccessLogRecord {
        var record = AccessLogRecord(kind: head.method == .CONNECT ? .tunnel : .request, client: settings.client, method: head.method.rawValue)
        (record.host, record.port, record.path) = RequestTarget.loggable(head.uri)
        if !logsPaths { record.path = "" }
        identify(&record, head)
        return record
    }

    /// The request's id (the next exchange's number), its User-Agent, HTTP version, target and
    /// (with `--access-log-referer`) Referer. Returns
    /// the `--request-id-header` field to send upstream, if one is configured.
    @discardableResult
    private mutating func identify(_ record: inout AccessLogRecord, _ head: HTTPRequestHead) -> (name: String, value: String)? {
        requestsSeen += 1
        record.connectionID = settings.connectionID
        record.exchange = requestsSeen
        record.httpMinor = head.version.minor
        if settings.recordsEnabled && settings.logsPaths {
            record.requestTarget = head.uri
            if settings.configuration.accessLogReferer {
                record.logsReferer = true
                record.referer = head.headers.first(name: "referer").map(AccessLogRecord.recordedField)
            }
        }
        if let agent = head.headers.first(name: "user-agent") {
            record.userAgent = AccessLogRecord.recordedUserAgent(agent)
        }
        guard let field = settings.configuration.requestIDHeader else { return nil }
        record.clientRequestID = RequestID.clientValue(head.headers, field: field)
        return record.requestID.map { (field, $0) }
    }

    private mutating func startAuthorizedRequest(_ head: HTTPRequestHead, user: String?, started: NIODeadline, now: NIODeadline, draining: Bool)
        -> ClientConnectionAction
    {
        if head.method == .CONNECT {
            return startTunnel(head, user: user, started: started, now: now)
        }
        var record = AccessLogRecord(kind: .request, client: settings.client, method: head.method.rawValue)
        record.user = user
        let requestIDField = identify(&record, head)
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
            if settings.recordsEnabled && settings.logsPaths {
                record.path = String(target.pathAndQuery.utf8.prefix { $0 != UInt8(ascii: "?") }) ?? target.pathAndQuery
            }
            if MessageRewriter.viaContains(head.headers, pseudonym: settings.via.pseudonym) {
                throw ProxyError.loop(head.headers[canonicalForm: "via"].joined(separator: ", "))
            }
            rewritten = try MessageRewriter.rewriteRequest(head, target: target, via: settings.via, requestID: requestIDField)
        } catch {
            record.fail(error)
            if record.host.isEmpty {
                (record.host, record.port, record.path) = RequestTarget.loggable(head.uri)
                if !(settings.recordsEnabled && settings.logsPaths) { record.path = "" }
            }
            return respond(error, record: record, started: started, now: now)
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
        state = .exchange(ExchangeState(clientHead: head, target: target, route: route, request: rewritten, record: record, started: started))
        return .connectUpstream(route)
    }

    /// `started`: when the head arrived (before any credential check), for the logged durations.
    private mutating func startTunnel(_ head: HTTPRequestHead, user: String?, started: NIODeadline, now: NIODeadline) -> ClientConnectionAction {
        var record = AccessLogRecord(kind: .tunnel, client: settings.client, method: "CONNECT")
        record.user = user
        identify(&record, head)
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
            record.fail(error)
            return respond(error, record: record, started: started, now: now)
        }
        state = .connectingTunnel(record: record, started: started)
        return .connectTunnel(target)
    }

    /// The client's decoder rejected its bytes.
    mutating func parseError(_ error: HTTPParserError, requestLineLength: Int, now: NIODeadline) -> ClientConnectionAction {
        let proxyError = RequestParseFailure.proxyError(for: error, requestLineLength: requestLineLength)
        switch state {
        case .authenticating:
            // The request being checked is malformed (e.g. a bad chunk after its head): answer
            // now; the verdict that comes later finds the connection closing.
            return failConnection(proxyError, now: now)
        case .closing, .closed, .switchingProtocols, .connectingTunnel:
            // Already answered (or past HTTP): bytes after a rejected request get no second answer.
            return .none
        case .exchange(var exchange):
            guard exchange.responseStarted else { return failExchange(exchange, proxyError, now: now) }
            // Too late for an answer of our own: the client sees a truncated response.
            exchange.record.fail(proxyError)
            state = .closing
            return .close(closeUpstream: true, log: finalRecord(exchange, now: now))
        case .idle, .discardingRefusedRequest:
            return failConnection(proxyError, now: now)
        case .modifying:
            return Self.impossible("a parse error while an event held the exchange")
        }
    }

    /// A read or write error on the client connection: nothing useful can be said to the client.
    mutating func clientError(now: NIODeadline) -> ClientConnectionAction {
        if let abandoned = tunnelAbandonedByClient("client_error", now: now) { return abandoned }
        switch state {
        case .closed:
            return .none
        case .exchange(var exchange):
            exchange.record.abort("client_error", message: "client connection error")
            state = .closed
            return .close(closeUpstream: true, log: finalRecord(exchange, now: now))
        default:
            state = .closed
            return .close(closeUpstream: false, log: nil)
        }
    }

    /// The client connection is gone.
    mutating func clientClosed(now: NIODeadline) -> ClientConnectionAction {
        clearQueue()
        if let abandoned = tunnelAbandonedByClient("client_closed", now: now) { return abandoned }
        defer { state = .closed }
        guard case .exchange(var exchange) = state else { return .none }
        if !exchange.responseComplete {
            exchange.record.abort("client_closed", message: "client closed the connection")
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
        clearQueue()
        state = .closing
        return .respondWithError(error, record: record, closeUpstream: false)
    }

    /// An error with no exchange to blame (a timeout before any head, a head the decoder rejected).
    private mutating func failConnection(_ error: ProxyError, now: NIODeadline) -> ClientConnectionAction {
        var record = AccessLogRecord(kind: .request, client: settings.client, method: "-")
        record.fail(error)
        return respond(error, record: record, started: now, now: now)
    }

    /// Ends the exchange with `error`: an error response when nothing was sent yet, otherwise an
    /// abrupt close (the client sees a truncated response, never a wrong one). The upstream closes.
    mutating func failExchange(_ exchange: ExchangeState, _ error: ProxyError, now: NIODeadline) -> ClientConnectionAction {
        var exchange = exchange
        exchange.lastUpstreamActivity = nil
        exchange.record.fail(error)
        if exchange.responseStarted {
            state = .closing
            return .close(closeUpstream: true, log: finalRecord(exchange, now: now))
        }
        var record = exchange.record
        record.status = Int(error.status.code)
        record.totalMs = (now - exchange.started).milliseconds
        clearQueue()
        state = .closing
        return .respondWithError(error, record: record, closeUpstream: true)
    }

    /// The record to log for a finished exchange, or nil when nobody reads the access log.
    func finalRecord(_ exchange: ExchangeState, now: NIODeadline) -> AccessLogRecord? {
        guard settings.recordsEnabled else { return nil }
        var record = exchange.record
        record.totalMs = (now - exchange.started).milliseconds
        return record
    }
}

@available(*, unavailable)
extension ClientConnectionStateMachine: Sendable {}

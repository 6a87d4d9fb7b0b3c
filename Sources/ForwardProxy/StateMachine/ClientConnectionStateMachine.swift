import NIOCore
import ProxyConfig
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

/// Every decision of one client connection, with no channel, context or I/O (anchor:
/// async-http-client's `HTTP1ConnectionStateMachine`): which request is served (pipelined ones
/// wait, in order), what the client is answered, when reading stops (backpressure), the
/// deadlines of the connection's single timer. The exchange in progress and the switch to a
/// tunnel are machines of their own (`ExchangeStateMachine`, `TunnelSwitchStateMachine`) that it
/// owns; how a request head starts is `RequestIntake`'s. `ClientConnectionHandler` turns NIO
/// events into calls here and runs the `ClientConnectionAction` every one of them returns.
struct ClientConnectionStateMachine {
    typealias Phase = ClientConnectionState.Phase
    typealias Action = ClientConnectionAction
    typealias Effect = ClientConnectionAction.Effect

    private var state: ClientConnectionState
    private(set) var settings: Settings
    private var queue = PipelineQueue()
    private var reading = ReadGate()
    private var credentials = VerifiedCredentials()
    private var lifecycle = ConnectionLifecycle()

    init(settings: Settings, now: NIODeadline) {
        self.settings = settings
        self.state = .idle(.nextRequest(now + settings.configuration.clientIdleTimeout))
    }

    // MARK: - views (for tests: the handler asks nothing)

    var phase: Phase { state.phase }
    /// The record of the exchange or tunnel in progress.
    var currentRecord: AccessLogRecord? { state.currentRecord }
    var readAllowed: Bool { state.readAllowed(queueIsEmpty: queue.isEmpty, upstreamWritable: reading.upstreamWritable) }
    var readAheadFull: Bool { queue.readAheadFull }
    var queuedParts: Int { queue.count }
    var queueOverflowed: Bool { queue.overflowed }
    var closeAfterExchange: Bool { lifecycle.closeAfterExchange }

    // MARK: - the connection

    /// The client's address, known once the handler is in the pipeline.
    mutating func clientAddressKnown(_ client: String) -> Action {
        settings.client = client
        return finish(.none)
    }

    /// The client presented a verified certificate (mutual TLS on the TLS listener): its name
    /// stands in for proxy credentials on every request of the connection.
    mutating func clientCertificateVerified(_ name: String) -> Action {
        credentials.certified(ProxyError.sanitized(name, limit: 64))
        return finish(.none)
    }

    /// A reload: it applies from the next request on (taken when that request's head starts, also
    /// for a pipelined head served from the queue). A credential verified before is checked again.
    mutating func reloaded(configuration: ProxyConfiguration, authenticator: ProxyAuthenticator?) -> Action {
        settings.offer(configuration: configuration, authenticator: authenticator)
        return finish(.none)
    }

    /// The connection became active: its idle deadline starts now. Refused at admission: answered
    /// before anything is read. Accepted after shutdown began (missed the quiesce): quiesced now.
    mutating func activated(now: NIODeadline, draining: Bool, admission: ClientAdmission.Verdict = .admitted) -> Action {
        guard case .idle = state else { return finish(.none) }
        if let refusal = admission.error { return finish(failConnection(refusal, now: now)) }
        if draining { return quiesce() }
        return finish(becomeIdle(now: now))
    }

    /// The first raw bytes of a request arrived: the head must be complete within the header timeout.
    mutating func requestBytesArrived(now: NIODeadline) -> Action {
        guard case .idle = state, queue.isEmpty else { return finish(.none) }
        let deadline = now + settings.configuration.headerTimeout
        state = .idle(.requestHead(deadline))
        return finish(timer(by: deadline))
    }

    mutating func timerFired(now: NIODeadline) -> Action {
        lifecycle.timerFired()
        switch state {
        case .idle(let wait) where wait.deadline > now:
            return finish(.scheduleTimer(lifecycle.rescheduled(wait.deadline)))
        case .idle(.nextRequest):
            state = .closed
            return finish(.close(closeUpstream: false, log: nil))
        case .idle(.requestHead):
            let timeout = settings.configuration.headerTimeout.milliseconds
            return finish(failConnection(ProxyError(.requestTimeout, "the request head was not received within \(timeout) ms"), now: now))
        case .exchange:
            let (timeout, recordsEnabled) = (settings.configuration.upstreamTimeout, settings.recordsEnabled)
            return finish(onExchange("the timer", now: now) { $0.timerFired(now: now, upstreamTimeout: timeout, recordsEnabled: recordsEnabled) })
        case .authenticating, .discardingRefusedRequest, .tunnel, .closing, .closed, .modifying:
            return finish(.none)
        }
    }

    /// NIO asks to read: now, or as soon as reading is allowed (`Then.read` of a later action).
    mutating func readRequested() -> Action {
        reading.pendingRead = true
        return finish(.none)
    }

    /// The client channel's writability changed: the upstream of the exchange is read only while
    /// the client can take what it sends (backpressure towards the origin).
    mutating func clientWritabilityChanged(_ writable: Bool) -> Action {
        reading.clientWritable = writable
        return finish(state.exchangeIsAttached ? .upstreamReads(allowed: writable) : .none)
    }

    /// Shutdown asks the connection to finish: after the current exchange, or now when idle.
    mutating func quiesce() -> Action {
        lifecycle.closeAfterExchange = true
        guard case .idle = state, queue.isEmpty else { return finish(.none) }
        // Idle for us, but the last response may still be queued behind a slow reader.
        state = .closing
        return finish(.closeAfterLastWrite)
    }

    /// The client's decoder rejected its bytes (`error`: what the client is told), also while a
    /// request is checked (its verdict then finds the connection closing), or cut mid-response.
    mutating func parseError(_ error: ProxyError, now: NIODeadline) -> Action {
        switch state {
        case .idle, .discardingRefusedRequest, .authenticating:
            return finish(failConnection(error, now: now))
        case .exchange:
            let recordsEnabled = settings.recordsEnabled
            return finish(onExchange("a parse error", now: now) { $0.fail(error, now: now, recordsEnabled: recordsEnabled) })
        case .closing, .closed, .tunnel, .modifying:
            // Already answered (or past HTTP): bytes after a rejected request get no second answer.
            return finish(.none)
        }
    }

    /// A read or write error on the client connection: nothing useful can be said to the client.
    mutating func clientError(now: NIODeadline) -> Action {
        clientLeft("client_error", now: now)
    }

    /// The client connection is gone.
    mutating func clientClosed(now: NIODeadline) -> Action {
        queue.clear()
        return clientLeft("client_closed", now: now)
    }

    private mutating func clientLeft(_ reason: String, now: NIODeadline) -> Action {
        switch state {
        case .tunnel:
            return finish(onTunnel { $0.clientLeft(reason, now: now) })
        case .exchange(var exchange):
            state = .closed
            return finish(.close(closeUpstream: true, log: exchange.clientLeft(reason, now: now, recordsEnabled: settings.recordsEnabled)))
        case .closed:
            return finish(.none)
        default:
            state = .closed
            return finish(reason == "client_closed" ? .none : .close(closeUpstream: false, log: nil))
        }
    }

    // MARK: - requests

    /// A decoded request part. Parts of a request that must wait (pipelining) are queued.
    mutating func requestPart(_ part: RequestPart, now: NIODeadline, draining: Bool) -> Action {
        switch state {
        case .closing, .closed, .tunnel, .modifying:
            // Nothing more is served: after an answer that closes, after a CONNECT head (only its
            // `.end` comes), during a switch (raw bytes come as `TunnelEvent.rawBytes`).
            return finish(.none)
        case .exchange(let exchange) where exchange.requestComplete:
            return enqueue(part)
        case .authenticating:
            // The parts of the request being checked wait here; nothing more is read meanwhile,
            // so this holds at most one read event. Past the bound the request is refused (its
            // own parts must never be dropped from the queue).
            if case .body(let buffer) = part, !queue.takesBody(buffer.readableBytes) {
                return finish(failConnection(PipelineQueue.uncheckedBodyTooLarge, now: now))
            }
            return enqueue(part)
        case .idle where !queue.isEmpty, .discardingRefusedRequest where !queue.isEmpty:
            return enqueue(part)
        case .idle, .exchange, .discardingRefusedRequest:
            return finish(handle(part, now: now, draining: draining))
        }
    }

    /// Serves the next queued part that may be handled now (`Then.serveQueue`: call again). When none
    /// may: after an overflow, once the queue is answered, 503 and close; the decoder may parse again.
    mutating func serveQueued(now: NIODeadline, draining: Bool) -> Action {
        if state.servesQueuedParts, let part = queue.dequeue() {
            return Action(handle(part, now: now, draining: draining), then: .serveQueue)
        }
        var effect = Effect.none
        if queue.overflowed, queue.isEmpty, case .idle = state {
            effect = failConnection(PipelineQueue.overflow, now: now)
        }
        return finish(effect, then: queue.readAheadFull ? [] : .releaseDecoder)
    }

    /// The verdict on the credentials of the request in `.authenticating`; then the parts that
    /// waited for it are served.
    mutating func credentialsChecked(_ verdict: ProxyAuthenticator.Verdict, now: NIODeadline, draining: Bool) -> Action {
        guard case .authenticating(let head, let started) = state else { return finish(.none) }
        let decision = RequestIntake.verdict(
            verdict, on: head, started: started, draining: draining, settings: settings, credentials: &credentials, lifecycle: &lifecycle
        )
        return finish(begin(decision, started: started, now: now), then: .serveQueue)
    }

    private mutating func enqueue(_ part: RequestPart) -> Action {
        queue.enqueue(part)
        return finish(.none, then: queue.readAheadFull ? .holdDecoder : [])
    }

    private mutating func handle(_ part: RequestPart, now: NIODeadline, draining: Bool) -> Effect {
        if case .discardingRefusedRequest = state {
            // The refused request's parts are dropped; after its end the next request may come.
            guard case .end = part else { return .none }
            if lifecycle.closeAfterExchange { state = .closing }
            return lifecycle.closeAfterExchange ? .closeAfterLastWrite : becomeIdle(now: now)
        }
        switch part {
        case .head(let head):
            if settings.applyReload() { credentials.forget() }
            let decision = RequestIntake.head(head, started: now, draining: draining, settings: settings, credentials: credentials, lifecycle: &lifecycle)
            return begin(decision, started: now, now: now)
        case .body(let buffer):
            return onExchange("a request body", now: now) { $0.requestBody(buffer, now: now) }
        case .end(let trailers):
            return onExchange("a request end", now: now) { $0.requestEnd(trailers, now: now) }
        }
    }

    private mutating func begin(_ decision: consuming RequestIntake.Decision, started: NIODeadline, now: NIODeadline) -> Effect {
        switch consume decision {
        case .exchange(let exchange, let route):
            state = .exchange(exchange)
            return .connectUpstream(route)
        case .tunnel(let tunnel, let target):
            state = .tunnel(tunnel)
            return .connectTunnel(target)
        case .refused(let error, let record):
            return answer(error, record: record, started: started, now: now)
        case .answeredLocally(let answer, let record):
            state = .closing
            return .respondLocally(answer, record: record)
        case .authenticate(let head, let credentials, let authenticator):
            state = .authenticating(head, started: started)
            return .authenticate(credentials, by: authenticator)
        case .refuseCredentials(let refusal, let record, let keepAlive):
            if !keepAlive { queue.clear() }
            state = keepAlive ? .discardingRefusedRequest : .closing
            return .refuseCredentials(refusal, record: record, keepAlive: keepAlive)
        }
    }

    // MARK: - the exchange's upstream

    /// An event of the exchange's upstream side. A dial or connect failure after the exchange ended
    /// is ignored (the handler closes a connection no action takes); the response's end ends it.
    mutating func upstream(_ event: consuming UpstreamEvent, now: NIODeadline) -> Action {
        switch event {
        case .dialed: return finish(state.exchangeIsConnecting ? .attachDialedUpstream : .none)
        case .connectFailed where !state.exchangeIsConnecting: return finish(.none)
        case .connected(let info): reading.upstreamWritable = info.writable
        case .writabilityChanged(let writable):
            reading.upstreamWritable = writable
            return finish(.none)
        default: break
        }
        guard var exchange = state.takeExchange() else { return finish(Self.impossible("an upstream event outside an exchange")) }
        let action = exchange.upstream(consume event, now: now, settings: settings, closeAfterExchange: &lifecycle.closeAfterExchange)
        guard case .responseEnded(let trailers, let disposal, let log, let early, let closeClient) = action else {
            return finish(apply(action, consume exchange, now: now))
        }
        if early { lifecycle.closeAfterExchange = true }
        if lifecycle.closeAfterExchange || closeClient {
            state = .closing
            return finish(.finishExchange(trailers: trailers, upstream: disposal, log: log, then: .closeAfterLastWrite))
        }
        let deadline = now + settings.configuration.clientIdleTimeout
        state = .idle(.nextRequest(deadline))
        _ = lifecycle.scheduleTimer(by: deadline)
        return finish(.finishExchange(trailers: trailers, upstream: disposal, log: log, then: .next(idleDeadline: deadline)), then: .serveQueue)
    }

    /// Runs `event` on the exchange in progress, moved out of the state for it (no copy).
    private mutating func onExchange(_ what: String, now: NIODeadline, _ event: (inout ExchangeStateMachine) -> ExchangeStateMachine.Action) -> Effect {
        guard var exchange = state.takeExchange() else { return Self.impossible("\(what) outside an exchange") }
        let action = event(&exchange)
        return apply(action, consume exchange, now: now)
    }

    /// Runs what the exchange decided; the exchange goes back into the state unless it is over.
    private mutating func apply(_ action: consuming ExchangeStateMachine.Action, _ exchange: consuming ExchangeStateMachine, now: NIODeadline) -> Effect {
        switch action {
        case .failed(_, .cut(let log), let blamed):
            state = .closing
            return .blaming(blamed, then: .close(closeUpstream: true, log: log))
        case .failed(let error, .answer(let record), let blamed):
            return .blaming(blamed, then: respond(error, record: record, closeUpstream: true))
        case .upgraded(let head, let record, let started):
            state = .tunnel(TunnelSwitchStateMachine(upgrade: record, started: started, idleTimeout: settings.configuration.tunnelIdleTimeout))
            return .beginTunnelSwitch(upgradeHead: head)
        default:
            state = .exchange(exchange)
        }
        let upstreamDeadline = now + settings.configuration.upstreamTimeout
        switch consume action {
        case .touched: return timer(by: upstreamDeadline)
        case .sendRequest(let head, let buffered):
            return .sendRequest(head, buffered: buffered, upstreamReads: reading.clientWritable, timer: lifecycle.scheduleTimer(by: upstreamDeadline))
        case .writeUpstream(let part): return .writeUpstream(part, timer: lifecycle.scheduleTimer(by: upstreamDeadline))
        case .writeClient(let part): return .writeClient(part, timer: lifecycle.scheduleTimer(by: upstreamDeadline))
        case .scheduleTimer(let due): return .scheduleTimer(lifecycle.rescheduled(due))
        case .retry(let route, let blamed): return .retryUpstream(route, blamed: blamed)
        case .responseEnded: return Self.impossible("a response end outside `upstream(_:now:)`")
        case .none, .failed, .upgraded: return .none
        }
    }

    // MARK: - the tunnel

    /// An event of the switch to a tunnel (ignored when none is under way).
    mutating func tunnel(_ event: TunnelEvent, now: NIODeadline) -> Action {
        finish(onTunnel { $0.handle(event, now: now) })
    }

    /// Runs `event` on the tunnel being set up, moved out of the state for it, and what it decided.
    private mutating func onTunnel(_ event: (inout TunnelSwitchStateMachine) -> TunnelSwitchStateMachine.Action) -> Effect {
        guard var tunnel = state.takeTunnel() else { return .none }
        switch event(&tunnel) {
        case .proceed(let effect):
            state = .tunnel(tunnel)
            return effect
        case .answer(let error, let record):
            return respond(error, record: record, closeUpstream: false)
        case .finished(let effect):
            state = .closed
            return effect
        }
    }

    // MARK: - answers, timers, the end of every event

    /// Answers `error` and closes: the request body (if any) was not consumed, so the connection
    /// cannot carry another request.
    private mutating func answer(_ error: ProxyError, record: AccessLogRecord, started: NIODeadline, now: NIODeadline) -> Effect {
        var record = record
        record.status = error.statusCode
        record.totalMs = (now - started).milliseconds
        return respond(error, record: record, closeUpstream: false)
    }

    /// An error with no exchange to blame (a timeout before any head, a head the decoder rejected).
    private mutating func failConnection(_ error: ProxyError, now: NIODeadline) -> Effect {
        var record = AccessLogRecord(kind: .request, client: settings.client, method: "-")
        record.fail(error)
        return answer(error, record: record, started: now, now: now)
    }

    private mutating func respond(_ error: ProxyError, record: AccessLogRecord, closeUpstream: Bool) -> Effect {
        queue.clear()
        state = .closing
        var record = record
        let response = settings.errorAnswer(error, keepAlive: false, for: &record)
        return .respondWithError(response, record: record, closeUpstream: closeUpstream)
    }

    private mutating func becomeIdle(now: NIODeadline) -> Effect {
        let deadline = now + settings.configuration.clientIdleTimeout
        state = .idle(.nextRequest(deadline))
        return timer(by: deadline)
    }

    private mutating func timer(by deadline: NIODeadline) -> Effect {
        lifecycle.scheduleTimer(by: deadline).map { .scheduleTimer($0) } ?? .none
    }

    /// Every event ends here: a read NIO asked for while not allowed goes ahead once it is allowed.
    private mutating func finish(_ effect: consuming Effect, then: Action.Then = []) -> Action {
        var then = then
        if reading.pendingRead, !then.contains(.serveQueue), readAllowed {
            reading.pendingRead = false
            then.insert(.read)
        }
        return Action(effect, then: then)
    }

    /// An event that cannot happen in this state (a bug): debug builds stop, release builds ignore it.
    private static func impossible(_ what: String, file: StaticString = #fileID, line: UInt = #line) -> Effect {
        assertionFailure("impossible transition: \(what)", file: file, line: line)
        return .none
    }
}

@available(*, unavailable)
extension ClientConnectionStateMachine: Sendable {}

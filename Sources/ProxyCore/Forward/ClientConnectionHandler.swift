import Logging
import NIOCore
import NIOHTTP1

/// Runs one client connection: turns NIO events (client side, and the upstream side through
/// `UpstreamHTTPDelegate`) into events of `ClientConnectionStateMachine` and runs the actions it
/// returns. Every decision — pipelining, retries, early responses, upgrades, backpressure,
/// timeouts — is the machine's; this class only does I/O.
final class ClientConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let env: ProxyEnvironment
    let pool: UpstreamPool
    /// The pipeline's decoder: first bytes of a request, the request line's length, the
    /// read-ahead gate.
    let requestDecoder: ClientRequestDecoder
    let codec: TunnelSwitch.ClientCodec
    /// Whether the client may be served at all (ACL, connection limits), decided at accept.
    let admission: ClientAdmission.Verdict
    var logger: Logger
    var machine: ClientConnectionStateMachine
    var context: ChannelHandlerContext?

    /// The upstream connection carrying the current exchange.
    var upstream: UpstreamHTTPConnection?
    var timer: Scheduled<Void>?
    /// Serializes responses into the bytes the client reads (no HTTP encoder on the pipeline).
    var responseWriter = HTTPMessageWriter()
    private lazy var onRequestBytes: () -> Void = { [weak self] in self?.requestStarted() }
    /// The upstream side of a tunnel being set up: a dialed CONNECT target, or the connection
    /// that accepted an upgrade.
    var switching: TunnelUpstream?
    /// The environment's settings generation the machine was last given.
    private var settingsGeneration: Int
    /// Set on a transparent connection's HTTP pipeline: its records say so.
    var transparent: TransparentOrigin?

    init(
        env: ProxyEnvironment,
        pool: UpstreamPool,
        requestDecoder: ClientRequestDecoder,
        codec: TunnelSwitch.ClientCodec,
        admission: ClientAdmission.Verdict = .admitted
    ) {
        self.env = env
        self.pool = pool
        self.requestDecoder = requestDecoder
        self.codec = codec
        self.admission = admission
        self.logger = env.logger
        let (live, generation) = env.current()
        self.settingsGeneration = generation
        self.machine = ClientConnectionStateMachine(
            settings: .init(
                configuration: live.configuration, via: env.via, client: "?", recordsEnabled: env.recordsEnabled,
                requiresAuthentication: live.authenticator != nil, logsPaths: env.accessLog.isEnabled,
                connectionID: RequestID.nextConnection()
            ),
            now: .now()
        )
    }

    /// Hands a reloaded configuration to the machine, which takes it when the next request starts.
    private func offerReloadedSettings() {
        guard env.generation != settingsGeneration else { return }
        let (live, generation) = env.current()
        machine.reloaded(configuration: live.configuration, requiresAuthentication: live.authenticator != nil)
        settingsGeneration = generation
    }

    /// The loop's clock (virtual on an EmbeddedEventLoop); the pool belongs to this channel's loop.
    var now: NIODeadline { pool.eventLoop.now }

    // MARK: - lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if let remote = context.channel.remoteAddress {
            let client = Self.format(remote)
            machine.settings.client = client
            logger[metadataKey: "client"] = "\(client)"
        }
        if context.channel.isActive { becameActive() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        requestDecoder.disarm()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        becameActive()
        context.fireChannelActive()
    }

    private func becameActive() {
        run(machine.activated(now: now, draining: env.isDraining, admission: admission))
        requestDecoder.arm(onRequestBytes)
    }

    func channelInactive(context: ChannelHandlerContext) {
        run(machine.clientClosed(now: now))
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            run(machine.quiesce())
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parserError = error as? HTTPParserError {
            run(machine.parseError(parserError, requestLineLength: requestDecoder.requestLineLength, now: now))
        } else if case ByteToMessageDecoderError.dataReceivedInErrorState = error {
            // Bytes after a request the decoder rejected: that rejection was answered (or is being
            // answered, after the responses before it); these get nothing.
        } else {
            // Resets and other I/O errors: nothing useful can be said to the client.
            run(machine.clientError(now: now))
        }
    }

    // MARK: - inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if machine.isSwitching {
            // The decoder is gone or going: what arrives now is tunnel bytes.
            machine.rawBytes(data)
            return
        }
        let part = unwrapInboundIn(data)
        if case .head = part { offerReloadedSettings() }
        run(machine.requestPart(part, now: now, draining: env.isDraining))
        if machine.readAheadFull { requestDecoder.hold() }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        upstream?.flush()
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        run(machine.clientWritabilityChanged(context.channel.isWritable))
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if machine.readRequested() { context.read() }
    }

    /// The first bytes of a request arrived (from the decoder).
    private func requestStarted() {
        run(machine.requestBytesArrived(now: now))
    }

    // MARK: - actions

    func run(_ action: consuming ClientConnectionAction) {
        guard let context else { return }
        // Consumed: the payloads move out of the action instead of being copied.
        switch consume action {
        case .none:
            break
        case .scheduleTimer(let deadline):
            schedule(deadline, context: context)
        case .connectUpstream(let route):
            if let pooled = pool.take(route.poolKey) {
                env.metrics?.poolReuses.increment()
                attach(pooled, info: UpstreamConnectInfo(pooled: true, dialedIP: pooled.dialedIP, writable: pooled.isWritable))
            } else {
                connect(route, avoiding: [], context: context)
            }
        case .sendRequest(let head, let buffered, let deadline):
            upstream?.write(.head(head))
            for part in buffered {
                switch part {
                case .head: break
                case .body(let buffer): upstream?.write(.body(.byteBuffer(buffer)))
                case .end(let trailers): upstream?.write(.end(trailers))
                }
            }
            upstream?.flush()
            if let deadline { schedule(deadline, context: context) }
        case .writeUpstream(let part, let deadline):
            upstream?.write(part)
            if case .end = part { upstream?.flush() }
            if let deadline { schedule(deadline, context: context) }
        case .upstreamReads(let allowed):
            upstream?.setReadAllowed(allowed)
        case .writeClient(let part, let deadline):
            writeResponse(part, context: context)
            if let deadline { schedule(deadline, context: context) }
        case .finishExchange(let trailers, let disposal, let log, let then):
            writeResponse(.end(trailers), context: context)
            context.flush()
            exchangeDone(disposal, log: log, then: then, context: context)
        case .respondWithError(let error, let record, let closeUpstream):
            if closeUpstream { dispose(.close) }
            respond(error, record: record, context: context)
        case .respondLocally(let answer, let record):
            respondLocally(answer, record: record, context: context)
        case .authenticate(let credentials):
            authenticate(credentials, context: context)
        case .refuseCredentials(let error, let record, let keepAlive):
            respond(error, record: record, keepAlive: keepAlive, context: context)
            if keepAlive { requestDecoder.arm(onRequestBytes) }
        case .close(let closeUpstream, let log):
            if closeUpstream {
                dispose(.close)
                closeTunnelUpstream()
            }
            if let log { finished(log) }
            context.close(promise: nil)
        case .closeAfterLastWrite:
            closeAfterLastWrite(context: context)
        case .retryUpstream(let route, let blamed):
            let failedIP = blamed?.address.ipAddress
            if let blamed { env.connector.recordFailure(blamed) }
            logger.debug(
                "upstream closed before answering; retrying on a new connection",
                metadata: ["proxy.host": "\(route.host)", "upstream.ip": "\(failedIP ?? "?")"]
            )
            connect(route, avoiding: failedIP.map { [$0] } ?? [], context: context)
        case .upstreamFailed(let blamed, let then):
            env.connector.recordFailure(blamed)
            run(then)
        case .connectTunnel(let target):
            connectTunnel(target, context: context)
        case .beginTunnelSwitch(let upgradeHead):
            beginTunnelSwitch(upgradeHead: upgradeHead, context: context)
        case .installTunnel(let record, let started, let clientBytes, let sayEstablished):
            installTunnel(record: record, started: started, clientBytes: clientBytes, sayEstablished: sayEstablished, context: context)
        }
        if machine.takePendingRead() { context.read() }
    }

    private func schedule(_ deadline: NIODeadline, context: ChannelHandlerContext) {
        timer?.cancel()
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.run(self.machine.timerFired(now: self.now))
        }
    }

    private func exchangeDone(
        _ disposal: ClientConnectionAction.UpstreamDisposal,
        log: AccessLogRecord?,
        then: ClientConnectionAction.AfterExchange,
        context: ChannelHandlerContext
    ) {
        dispose(disposal)
        if let log { finished(log) }
        switch then {
        case .closeAfterLastWrite:
            closeAfterLastWrite(context: context)
        case .next:
            requestDecoder.arm(onRequestBytes)
            drainQueue()
        }
    }

    /// Serves the parts read ahead that may be handled now, in order.
    private func drainQueue() {
        offerReloadedSettings()
        while let action = machine.serveQueued(now: now, draining: env.isDraining) {
            run(action)
        }
        run(machine.queueDrained(now: now))
        if !machine.readAheadFull { requestDecoder.release() }
    }

    /// Checks credentials: at once when no hash is needed, else on the authenticator's threads.
    private func authenticate(_ credentials: ProxyCredentials, context: ChannelHandlerContext) {
        guard let authenticator = env.authenticator else {
            credentialsChecked(.denied(user: credentials.user, reason: "authentication is not configured"))
            return
        }
        if let verdict = authenticator.verdictWithoutHashing(credentials) {
            credentialsChecked(verdict)
            return
        }
        authenticator.verify(credentials, on: context.eventLoop).assumeIsolated().whenSuccess { verdict in
            guard self.context != nil else { return }
            self.credentialsChecked(verdict)
        }
    }

    private func credentialsChecked(_ verdict: ProxyAuthenticator.Verdict) {
        switch verdict {
        case .allowed: break
        case .denied(let user, let reason):
            // The user name as sent (escaped, bounded), never the password.
            logger.notice("proxy authentication failed", metadata: ["user": "\(ProxyError.sanitized(user, limit: 64))", "reason": "\(reason)"])
        case .busy:
            logger.warning("proxy authentication overloaded: too many credential checks in progress")
        }
        run(machine.credentialsChecked(verdict, now: now, draining: env.isDraining))
        drainQueue()
    }

    private func dispose(_ disposal: ClientConnectionAction.UpstreamDisposal) {
        guard let connection = upstream else { return }
        upstream = nil
        switch disposal {
        case .none:
            break
        case .release:
            connection.release(to: pool)
        case .close:
            connection.detach()
            connection.close()
        }
    }

    /// Writes a short text error response, logs it, and closes the connection after the write
    /// unless `keepAlive` (a 407 the client may answer on the same connection).
    private func respond(_ error: ProxyError, record: AccessLogRecord, keepAlive: Bool = false, context: ChannelHandlerContext) {
        var body = context.channel.allocator.buffer(capacity: error.message.utf8.count + 1)
        body.writeString(error.message)
        body.writeString("\n")
        var head = HTTPResponseHead(version: .http1_1, status: error.status)
        head.headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        head.headers.add(name: "Content-Length", value: String(body.readableBytes))
        head.headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        head.headers.add(name: "Cache-Control", value: "no-store")
        head.headers.add(name: "X-Proxy-Error", value: error.shortDescription)
        head.headers.add(name: "Proxy-Status", value: ProxyStatus.fieldValue(for: error))
        head.headers.add(name: "X-Content-Type-Options", value: "nosniff")
        if error.status == .proxyAuthenticationRequired, let authenticator = env.authenticator {
            head.headers.add(name: "Proxy-Authenticate", value: authenticator.challenge)
        }
        if error.asksToRetryLater {
            head.headers.add(name: "Retry-After", value: String(ProxyError.retryAfterSeconds))
        }
        var record = record
        record.bytesDown = body.readableBytes
        // Recorded before the answer goes out: a client that sends its next request on another
        // connection (another event loop) as soon as it reads this one must find this one first
        // in the access log and /errors.
        finished(record)
        if keepAlive {
            writeResponse(.head(head), context: context)
            writeResponse(.body(.byteBuffer(body)), context: context)
            context.flush()
        } else {
            writeAndClose(head, body: body, context: context)
        }
        logger.debug("request failed", metadata: ["status": "\(error.status.code)", "error": "\(error.shortDescription)"])
    }

    /// Writes a response the proxy gives itself, logs it, and closes after it: the request's body
    /// (if any) is not read, so the connection cannot carry another request.
    private func respondLocally(_ answer: LocalAnswer, record: AccessLogRecord, context: ChannelHandlerContext) {
        var head = answer.head
        var body = context.channel.allocator.buffer(capacity: answer.body.utf8.count)
        body.writeString(answer.body)
        head.headers.add(name: "Content-Length", value: String(body.readableBytes))
        head.headers.add(name: "Connection", value: "close")
        var record = record
        record.bytesDown = body.readableBytes
        writeAndClose(head, body: body, context: context)
        finished(record)
    }

    private func writeAndClose(_ head: HTTPResponseHead, body: ByteBuffer, context: ChannelHandlerContext) {
        writeResponse(.head(head), context: context)
        let written = context.eventLoop.makePromise(of: Void.self)
        writeResponse(.body(.byteBuffer(body)), promise: written, context: context)
        context.flush()
        written.futureResult.assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// Writes one part of a response as bytes. `promise` completes when the part's last bytes
    /// are written (with an empty write when the part has none, so that it completes in order).
    func writeResponse(_ part: HTTPServerResponsePart, promise: EventLoopPromise<Void>? = nil, context: ChannelHandlerContext) {
        let allocator = context.channel.allocator
        var last: ByteBuffer?
        switch part {
        case .head(let head):
            last = responseWriter.head(head, allocator: allocator)
        case .body(.byteBuffer(let buffer)):
            responseWriter.body(buffer, allocator: allocator) { bytes in
                if let pending = last { context.write(wrapOutboundOut(pending), promise: nil) }
                last = bytes
            }
        case .body(.fileRegion):
            preconditionFailure("the proxy never writes file regions")
        case .end(let trailers):
            last = responseWriter.end(trailers, allocator: allocator)
        }
        if let last {
            context.write(wrapOutboundOut(last), promise: promise)
        } else if let promise {
            context.write(wrapOutboundOut(allocator.buffer(capacity: 0)), promise: promise)
        }
    }

    /// Closes once the response's last bytes are on the wire: `close` discards writes still queued
    /// behind a slow client, which would truncate a response that the origin sent completely.
    /// An empty write's promise completes after every write queued before it, so no response
    /// needs a promise of its own (one allocation per request less).
    private func closeAfterLastWrite(context: ChannelHandlerContext) {
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    // MARK: - upstream connections

    private func connect(_ route: UpstreamRoute, avoiding: Set<String>, context: ChannelHandlerContext) {
        let exchange = machine.exchangeNumber
        let key = route.poolKey
        env.connector.connect(
            host: route.host,
            port: route.port,
            tls: route.tls,
            avoiding: avoiding,
            on: context.eventLoop,
            channelInitializer: { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Self.configureUpstreamPipeline(channel, key: key)
                }
            }
        ).assumeIsolated().whenComplete { result in
            switch result {
            case .success(let connected):
                // Each attempt of the connector's Happy Eyeballs gets its own pipeline, so the
                // winner's handler is looked up in the winning channel.
                guard self.context != nil, self.machine.wantsUpstream(forExchange: exchange),
                    let connection = try? connected.channel.pipeline.syncOperations.handler(type: UpstreamHTTPConnection.self)
                else {
                    connected.channel.close(promise: nil)
                    return
                }
                connection.dialedAddress = connected.address
                self.attach(
                    connection,
                    info: UpstreamConnectInfo(
                        pooled: false,
                        dialedIP: connected.address.ipAddress,
                        source: connected.source.rawValue,
                        resolveMs: connected.resolveTime.milliseconds,
                        connectMs: connected.connectTime.milliseconds,
                        tlsMs: connected.tls?.duration.milliseconds,
                        tlsResumed: connected.tls?.resumed,
                        writable: connected.channel.isWritable
                    )
                )
            case .failure(let error):
                guard self.context != nil, self.machine.wantsUpstream(forExchange: exchange) else { return }
                let proxyError = error as? ProxyError ?? ProxyError(.connectFailed, "cannot connect to \(route.host): \(error)")
                self.logger.debug(
                    "upstream connect failed",
                    metadata: ["proxy.host": "\(route.host)", "error": "\(proxyError.shortDescription)"]
                )
                self.run(self.machine.upstreamConnectFailed(proxyError, now: self.now))
            }
        }
    }

    /// The handlers of an upstream HTTP/1.1 connection: NIO's response decoder (which refuses bytes
    /// nobody asked for) and the connection, which serializes requests itself.
    static func configureUpstreamPipeline(_ channel: any Channel, key: PoolKey) throws {
        let sync = channel.pipeline.syncOperations
        let responseDecoder = UpstreamResponseDecoder()
        let decoder = ByteToMessageHandler(responseDecoder)
        let connection = UpstreamHTTPConnection(key: key, responseDecoder: responseDecoder)
        connection.decoderHandler = decoder
        try sync.addHandler(decoder)
        try sync.addHandler(connection)
    }

    private func attach(_ connection: UpstreamHTTPConnection, info: UpstreamConnectInfo) {
        connection.attach(to: self)
        connection.setReadAllowed(machine.clientWritable)
        upstream = connection
        run(machine.upstreamConnected(info, now: now))
    }

    static func format(_ address: SocketAddress) -> String {
        guard let ip = address.ipAddress, let port = address.port else { return "\(address)" }
        return address.protocol == .inet6 ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }
}

// MARK: - upstream events

extension ClientConnectionHandler: UpstreamHTTPDelegate {
    func upstream(_ connection: UpstreamHTTPConnection, received part: HTTPClientResponsePart) {
        guard connection === upstream, context != nil else {
            connection.detach()
            connection.close()
            return
        }
        switch part {
        case .head(let head): run(machine.upstreamHead(head, now: now))
        case .body(let buffer): run(machine.upstreamBody(buffer, now: now))
        case .end(let trailers): run(machine.upstreamEnd(trailers, now: now))
        }
    }

    func upstreamReadComplete(_ connection: UpstreamHTTPConnection) {
        context?.flush()
    }

    func upstreamWritabilityChanged(_ connection: UpstreamHTTPConnection) {
        guard connection === upstream else { return }
        machine.upstreamWritabilityChanged(connection.isWritable)
        if machine.takePendingRead() { context?.read() }
    }

    func upstreamClosed(_ connection: UpstreamHTTPConnection, error: (any Error)?) {
        guard connection === upstream else { return }
        upstream = nil
        let dialed = connection.dialedAddress.map { FailedAddress(address: $0, kind: UpstreamFailureKind(connectionError: error)) }
        let reason: UpstreamCloseReason
        if let error, let invalid = RequestParseFailure.invalidResponseReason(error) {
            reason = .invalidResponse(reason: invalid)
        } else if let error {
            reason = .failed(reason: UpstreamConnector.shortReason(error))
        } else {
            reason = .closed
        }
        run(machine.upstreamClosed(reason, dialed: dialed, now: now))
    }
}

@available(*, unavailable)
extension ClientConnectionHandler: Sendable {}

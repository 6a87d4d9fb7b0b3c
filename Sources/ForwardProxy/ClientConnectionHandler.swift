import Logging
import NIOCore
import NIOHTTP1
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

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
            let client = remote.endpointText
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
    func drainQueue() {
        offerReloadedSettings()
        while let action = machine.serveQueued(now: now, draining: env.isDraining) {
            run(action)
        }
        run(machine.queueDrained(now: now))
        if !machine.readAheadFull { requestDecoder.release() }
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
}

@available(*, unavailable)
extension ClientConnectionHandler: Sendable {}

import HTTP1Codec
import Logging
import NIOCore
import OpenSSLTLS
import NIOHTTP1
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

/// Runs one client connection: turns NIO events (client side, and the upstream side through
/// `UpstreamHTTPDelegate`) into events of `ClientConnectionStateMachine`, converting NIO's HTTP
/// response parts into the proxy's own, and runs the action every event returns. Every decision —
/// pipelining, retries, early responses, upgrades, backpressure, timeouts, the answers the proxy
/// writes itself — is the machine's; this class only does I/O and asks the machine nothing.
final class ClientConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ClientRequestEvent
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let env: ProxyEnvironment
    let pool: UpstreamPool
    /// The pipeline's decoder: first bytes of a request, the request line's length, the
    /// read-ahead gate.
    let requestDecoder: ClientRequestReader
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
    var responseWriter = ClientResponseWriter()
    /// Writes outgoing request heads (its buffer reused from one request to the next).
    var requestHeads = HeadWriter()
    private lazy var onRequestBytes: () -> Void = { [weak self] in self?.requestStarted() }
    /// The upstream side of a tunnel being set up: a dialed CONNECT target, or the connection
    /// that accepted an upgrade.
    var switching: TunnelUpstream?
    /// A connection a dial just made, offered to the machine: the action that takes it
    /// (`.attachDialedUpstream`, `.beginTunnelSwitch`) moves it on; one no action takes (its
    /// exchange or tunnel ended meanwhile) is closed.
    var offered: ConnectedUpstream?
    /// The switch to a tunnel began: the decoder is gone or going, reads are raw tunnel bytes.
    var readsRawBytes = false
    /// The environment's settings generation the machine was last given.
    private var settingsGeneration: Int
    /// Set on a transparent connection's HTTP pipeline: its records say so.
    var transparent: TransparentOrigin?

    init(
        env: ProxyEnvironment,
        pool: UpstreamPool,
        requestDecoder: ClientRequestReader,
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
                authenticator: live.authenticator, logsPaths: env.accessLog.isEnabled,
                connectionID: RequestID.nextConnection()
            ),
            now: .now()
        )
    }

    /// Hands a reloaded configuration to the machine, which takes it when the next request starts.
    private func offerReloadedSettings() {
        guard env.generation != settingsGeneration else { return }
        let (live, generation) = env.current()
        settingsGeneration = generation
        run(machine.reloaded(configuration: live.configuration, authenticator: live.authenticator))
    }

    /// The loop's clock (virtual on an EmbeddedEventLoop); the pool belongs to this channel's loop.
    var now: NIODeadline { pool.eventLoop.now }

    // MARK: - lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if let remote = context.channel.remoteAddress {
            let client = remote.endpointText
            logger[metadataKey: "client"] = "\(client)"
            run(machine.clientAddressKnown(client))
        }
        // On the TLS listener with `tls-client-ca`: the verified certificate is the client's identity.
        if let tls = try? context.pipeline.syncOperations.handler(type: OpenSSLHandler.self), let name = tls.clientCertificateName {
            run(machine.clientCertificateVerified(name))
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
        if case .handshakeCompleted(_, .some(let name), _) = event as? TLSServerEvent {
            // The TLS listener without `listen-socks`: this handler was there before the handshake.
            run(machine.clientCertificateVerified(name))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let refusal = error as? ClientRequestReader.Refusal {
            run(machine.parseError(refusal.error, now: now))
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
        if readsRawBytes {
            run(machine.tunnel(.rawBytes(data), now: now))
            return
        }
        let part: RequestPart
        switch unwrapInboundIn(data) {
        case .head:
            guard let head = requestDecoder.takeHead() else { return }
            offerReloadedSettings()
            part = .head(head)
        case .body(let buffer): part = .body(buffer)
        case .end(let trailers): part = .end(trailers)
        }
        run(machine.requestPart(part, now: now, draining: env.isDraining))
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
        run(machine.readRequested())
    }

    /// The first bytes of a request arrived (from the decoder).
    private func requestStarted() {
        run(machine.requestBytesArrived(now: now))
    }

    // MARK: - actions

    /// Runs an action: its effect, then what follows it (the decoder gate, a read NIO asked for,
    /// serving the requests read ahead, one after another).
    func run(_ action: consuming ClientConnectionAction) {
        var action = action
        while let context {
            let then = action.then
            // Consumed: the payloads move out of the action instead of being copied.
            perform((consume action).effect, context: context)
            if then.contains(.holdDecoder) { requestDecoder.hold() }
            if then.contains(.releaseDecoder) { requestDecoder.release() }
            if then.contains(.read) { context.read() }
            guard then.contains(.serveQueue) else { return }
            offerReloadedSettings()
            action = machine.serveQueued(now: now, draining: env.isDraining)
        }
    }

    private func perform(_ effect: consuming ClientConnectionAction.Effect, context: ChannelHandlerContext) {
        switch consume effect {
        case .none:
            break
        case .scheduleTimer(let deadline):
            schedule(deadline, context: context)
        case .connectUpstream(let route):
            if let pooled = pool.take(route.poolKey) {
                env.metrics?.poolReuses.increment()
                attach(pooled, info: UpstreamConnectInfo(
                    pooled: true, dialedIP: pooled.dialedIP, writable: pooled.isWritable, parentForward: pooled.parentForward))
            } else {
                connect(route, avoiding: [], context: context)
            }
        case .attachDialedUpstream:
            attachDialed()
        case .sendRequest(let head, let buffered, let upstreamReads, let deadline):
            upstream?.setReadAllowed(upstreamReads)
            sendHead(head, context: context)
            for part in buffered {
                switch part {
                case .head: break
                case .body(let buffer): upstream?.write(.body(.byteBuffer(buffer)))
                case .end(let trailers): upstream?.write(.end(trailers?.storage))
                }
            }
            upstream?.flush()
            if let deadline { schedule(deadline, context: context) }
        case .writeUpstream(let part, let deadline):
            upstream?.write(part.upstreamPart)
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
            dispose(disposal)
            if let log { finished(log) }
            switch then {
            case .closeAfterLastWrite: closeAfterLastWrite(context: context)
            case .next: requestDecoder.arm(onRequestBytes)
            }
        case .respondWithError(let answer, let record, let closeUpstream):
            if closeUpstream { dispose(.close) }
            respond(answer, record: record, keepAlive: false, context: context)
        case .respondLocally(let answer, let record):
            respondLocally(answer, record: record, context: context)
        case .authenticate(let credentials, let authenticator):
            authenticate(credentials, by: authenticator, context: context)
        case .refuseCredentials(let answer, let record, let keepAlive):
            respond(answer, record: record, keepAlive: keepAlive, context: context)
            if keepAlive {
                requestDecoder.resumeAfterRefusal()
                requestDecoder.arm(onRequestBytes)
            }
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
            perform(then, context: context)
        case .connectTunnel(let target):
            connectTunnel(target, context: context)
        case .beginTunnelSwitch(let upgradeHead):
            beginTunnelSwitch(upgradeHead: upgradeHead, context: context)
        case .installTunnel(let record, let started, let clientBytes, let sayEstablished, let idleTimeout):
            installTunnel(
                record: record, started: started, clientBytes: clientBytes, sayEstablished: sayEstablished, idleTimeout: idleTimeout,
                context: context
            )
        }
    }

    private func schedule(_ deadline: NIODeadline, context: ChannelHandlerContext) {
        timer?.cancel()
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.run(self.machine.timerFired(now: self.now))
        }
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

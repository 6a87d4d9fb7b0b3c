import ForwardProxy
import Logging
import NIOCore
import ProxyAccess
import ProxyConfig
import ProxyKit

/// The first handler of a transparent connection: reads its original destination, peeks at its
/// first bytes (at most `TransparentPeek.limit`, at most `--transparent-peek-timeout`), and then
/// either relays it (TLS by its SNI name, anything without a name to the original destination) or
/// hands it to the HTTP pipeline. Reads only while peeking (autoRead is off on this listener), so
/// nothing piles up while a name is resolved or an origin dialed. Decisions are `TransparentPlan`'s.
package final class TransparentConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer

    private enum State { case starting, peeking, deciding, done }

    let shared: TransparentContext
    let admission: ClientAdmission.Verdict
    private var env: ProxyEnvironment { shared.env }
    private var state = State.starting
    private var context: ChannelHandlerContext?
    private var buffer: ByteBuffer?
    private var original: SocketAddress?
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?
    private var clock: TransparentPeekClock?
    /// When the connection was accepted, by its event loop's clock (which a test moves).
    private var started = NIODeadline.uptimeNanoseconds(0)
    private var client = "?"
    private var logger: Logger

    package init(shared: TransparentContext, admission: ClientAdmission.Verdict) {
        self.shared = shared
        self.admission = admission
        self.logger = shared.env.logger
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        started = context.eventLoop.now
        if let remote = context.channel.remoteAddress {
            client = remote.endpointText
            logger[metadataKey: "client"] = "\(client)"
        }
        if context.channel.isActive { start(context: context) }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    package func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard state == .starting else { return }
        state = .peeking
        guard admission.error == nil else {
            // Refused at accept (ACL, limits): counted and logged there.
            state = .done
            context.close(promise: nil)
            return
        }
        shared.stats.accept()
        shared.originalDestination(context.channel).assumeIsolated().whenSuccess { original in
            guard let context = self.context else { return }
            guard let original, original != context.channel.localAddress, !self.shared.ownListeners.contains(original) else {
                // Not redirected (a direct connection to this port): never an open relay.
                self.shared.stats.missingOriginalDestination()
                self.shared.problemLog.run { suppressed in
                    self.logger.notice("transparent connection without an original destination (not redirected); closed", metadata: ["suppressed": "\(suppressed)"])
                }
                self.state = .done
                context.close(promise: nil)
                return
            }
            self.original = original
            let configuration = self.env.configuration
            self.clock = TransparentPeekClock(
                started: self.started, silentTimeout: configuration.transparentPeekTimeout,
                helloTimeout: configuration.transparentHelloTimeout, fallback: configuration.transparentFallback)
            self.evaluate()
            if self.state == .peeking { context.read() }
        }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if buffer == nil {
            buffer = bytes
        } else {
            buffer!.writeBuffer(&bytes)
        }
        if original != nil { evaluate() }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        if state == .peeking, original != nil { context.read() }
        context.fireChannelReadComplete()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        if state == .peeking || state == .deciding {
            logger.debug("transparent client closed before its connection was relayed")
        }
        state = .done
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: - decisions

    private func evaluate() {
        guard state == .peeking, let original, let context, var clock else { return }
        let received = buffer?.readableBytes ?? 0
        let peek = TransparentPeek.classify(buffer?.readableBytesView ?? ByteBuffer().readableBytesView)
        let (step, outcome) = clock.step(peek, received: received, now: context.eventLoop.now)
        self.clock = clock
        guard step != .wait, let outcome else {
            arm(at: clock.deadline, context: context)
            return
        }
        state = .deciding
        timer?.cancel()
        timer = nil
        shared.stats.peeked(outcome)
        // Checked once the peek is decided: the proxy's own connection was recorded when its
        // connect completed, before its first byte could arrive here. Both ends must match: an
        // app's connection may reuse the port number of one of the proxy's on a shared address.
        if shared.ownConnections.contains(client: context.channel.remoteAddress, original: original) {
            refuseOwnConnection(outcome: outcome, context: context)
            return
        }
        if case .malformed(let reason) = peek {
            shared.problemLog.run { suppressed in
                logger.info(
                    "transparent connection: not a well-formed ClientHello; relayed to its original destination",
                    metadata: ["reason": "\(reason)", "suppressed": "\(suppressed)"])
            }
        }
        switch step {
        case .wait:
            return
        case .refuse:
            refuse(name: nil, outcome: outcome, kind: .requestTimeout, reason: incompleteReason(received: received), context: context)
        case .relayOriginal:
            if outcome == .incomplete {
                shared.problemLog.run { suppressed in
                    logger.info(
                        "transparent connection: ClientHello or request head incomplete; relayed to its original destination",
                        metadata: ["reason": "\(incompleteReason(received: received))", "suppressed": "\(suppressed)"])
                }
            }
            relay(host: original.ipAddress ?? "", name: nil, outcome: outcome, hijack: false, context: context)
        case .resolve(let name, let http):
            let port = original.port ?? 0
            shared.resolver.resolve(host: name, port: port, on: context.eventLoop).assumeIsolated().whenComplete { result in
                guard self.state == .deciding, let context = self.context else { return }
                let (route, hijack) = TransparentPlan.route(
                    resolution: try? result.get(), original: original, http: http, fallback: self.env.configuration.transparentFallback
                )
                if hijack {
                    self.shared.stats.hijack()
                    self.env.metrics?.transparentHijacks.increment()
                    self.shared.hijackLog.run { suppressed in
                        self.logger.notice(
                            "transparent connection: the client dialed an address HTTPDNS does not give for its name",
                            metadata: ["name": "\(name)", "original_dst": "\(original.endpointText)", "suppressed": "\(suppressed)"]
                        )
                    }
                }
                switch route {
                case .relayByName:
                    self.relay(host: name, name: name, outcome: outcome, hijack: hijack, context: context)
                case .http:
                    self.handToHTTP(TransparentOrigin(originalDestination: original, peek: outcome.label, hijack: hijack), context: context)
                case .original:
                    self.shared.stats.fellBack()
                    self.relay(host: original.ipAddress ?? "", name: name, outcome: outcome, hijack: false, context: context)
                case .refuse:
                    self.refuse(name: name, outcome: outcome, reason: "HTTPDNS has no answer for \(name) (--transparent-fallback refuse)", context: context)
                }
            }
        }
    }

    /// (Re)schedules the peek's timer when the clock's deadline moved (the first byte arrived).
    private func arm(at deadline: NIODeadline, context: ChannelHandlerContext) {
        guard timerDeadline != deadline || timer == nil else { return }
        timer?.cancel()
        timerDeadline = deadline
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.timer = nil
            self?.evaluate()
        }
    }

    private func baseRecord(name: String?, outcome: TransparentStats.Peek, hijack: Bool) -> AccessLogRecord {
        var record = AccessLogRecord(kind: .transparent, client: client, method: "-")
        record.scheme = [.tls, .tlsNoSNI].contains(outcome) ? "tls" : "tcp"
        record.host = name ?? original?.ipAddress ?? ""
        record.port = original?.port ?? 0
        record.originalDestination = original.map(\.endpointText)
        record.peek = outcome.label
        record.hijack = hijack
        return record
    }

    /// The proxy's own upstream connection, redirected back to it: relaying it would dial the
    /// same origin again, be redirected again, and so on until the connection limit.
    private func refuseOwnConnection(outcome: TransparentStats.Peek, context: ChannelHandlerContext) {
        state = .done
        shared.stats.refuse()
        let reason = "the proxy's own connection to \(original.map(\.endpointText) ?? "?") was redirected back to it: "
            + "the netfilter rules exempt neither the uid it runs as nor its --outbound-mark (transparent-rules --proxy-uid / --outbound-mark)"
        var record = baseRecord(name: nil, outcome: outcome, hijack: false)
        record.fail(ProxyError(.loopDetected, reason))
        record.totalMs = (context.eventLoop.now - started).milliseconds
        env.finished(record)
        shared.loopLog.run { suppressed in
            logger.error("transparent connection refused: redirection loop", metadata: ["reason": "\(reason)", "suppressed": "\(suppressed)"])
        }
        context.close(promise: nil)
    }

    private func incompleteReason(received: Int) -> String {
        "\(received) bytes of a ClientHello or request head by --transparent-hello-timeout (\(env.configuration.transparentHelloTimeout.milliseconds) ms)"
    }

    private func refuse(
        name: String?, outcome: TransparentStats.Peek, kind: ProxyError.Kind = .resolveFailed, reason: String, context: ChannelHandlerContext
    ) {
        state = .done
        shared.stats.refuse()
        var record = baseRecord(name: name, outcome: outcome, hijack: false)
        record.fail(ProxyError(kind, reason))
        record.totalMs = (context.eventLoop.now - started).milliseconds
        env.finished(record)
        shared.problemLog.run { suppressed in
            logger.notice("transparent connection refused", metadata: ["reason": "\(reason)", "suppressed": "\(suppressed)"])
        }
        context.close(promise: nil)
    }

    /// Dials `host` (a name: its HTTPDNS addresses; an IP: the original destination) on the
    /// original port, under the destination policy, and joins the two connections.
    private func relay(host: String, name: String?, outcome: TransparentStats.Peek, hijack: Bool, context: ChannelHandlerContext) {
        let port = original?.port ?? 0
        var record = baseRecord(name: name, outcome: outcome, hijack: hijack)
        env.connector.connect(
            host: host, port: port, tls: nil, avoiding: [], on: context.eventLoop,
            channelInitializer: { channel in channel.eventLoop.makeSucceededVoidFuture() }
        ).assumeIsolated().whenComplete { result in
            switch result {
            case .success(let connected):
                guard self.state == .deciding, let context = self.context, context.channel.isActive else {
                    connected.channel.close(promise: nil)
                    return
                }
                record.dialedIP = connected.address.ipAddress
                record.source = connected.source.rawValue
                record.resolveMs = connected.resolveTime.milliseconds
                record.connectMs = connected.connectTime.milliseconds
                record.status = 200
                self.install(upstream: connected.channel, record: record, context: context)
            case .failure(let error):
                guard self.state == .deciding, let context = self.context else { return }
                self.state = .done
                self.shared.stats.refuse()
                let proxyError = error as? ProxyError ?? ProxyError(.connectFailed, "cannot connect to \(host): \(error)")
                record.fail(proxyError)
                record.totalMs = (context.eventLoop.now - self.started).milliseconds
                self.env.finished(record)
                self.shared.problemLog.run { suppressed in
                    self.logger.info(
                        "transparent relay failed", metadata: ["target": "\(host):\(port)", "error": "\(proxyError.message)", "suppressed": "\(suppressed)"])
                }
                context.close(promise: nil)
            }
        }
    }

    private func install(upstream: any Channel, record: AccessLogRecord, context: ChannelHandlerContext) {
        state = .done
        let held = buffer
        buffer = nil
        TunnelSwitch.relay(from: context, to: upstream, clientBytes: held, record: record, started: started, env: env)
    }

    /// The HTTP pipeline takes over: the request head read so far is replayed into it, and it
    /// serves every request of the connection by its own Host (`TransparentRequestTargetHandler`).
    private func handToHTTP(_ origin: TransparentOrigin, context: ChannelHandlerContext) {
        state = .done
        do {
            try ClientPipeline.configure(context.channel, env: env, admission: admission, transparent: origin)
        } catch {
            context.close(promise: nil)
            return
        }
        if let held = buffer {
            buffer = nil
            context.fireChannelRead(NIOAny(held))
            context.fireChannelReadComplete()
        }
        let client = context.channel
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        _ = client.setOption(ChannelOptions.maxMessagesPerRead, value: 16)
        _ = client.setOption(ChannelOptions.autoRead, value: true)
    }
}

@available(*, unavailable)
extension TransparentConnectionHandler: Sendable {}

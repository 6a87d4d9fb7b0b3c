import ForwardProxy
import Logging
import NIOCore
import ProxyAccess
import ProxyConfig
import ProxyKit
import TransparentProxy

/// Runs one SOCKS connection (`--socks-listen`): feeds what it reads to `SOCKSHandshake` and does
/// what each output says — write the reply, read more, check credentials against the proxy's
/// htpasswd, dial the destination as an HTTP CONNECT is dialed (connect-ports, destination policy,
/// HTTPDNS, connect-by-IP with alternates) — then joins the two connections as a CONNECT tunnel
/// (access log, metrics, idle timeout). Reads only while the handshake wants bytes (autoRead is
/// off on this listener), so nothing piles up while a name is resolved or an origin dialed.
package final class SOCKSConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    private let env: ProxyEnvironment
    private let admission: ClientAdmission.Verdict
    private var machine: SOCKSHandshake
    private var context: ChannelHandlerContext?
    private var record: AccessLogRecord?
    private var done = false
    /// Closes a handshake not finished within `--header-timeout` (a silent or slow client).
    private var deadline: Scheduled<Void>?
    private let started = NIODeadline.now()
    private var client = "?"
    private var logger: Logger
    /// `socks-sniff`: the peek of a CONNECT to an address, granted before the dial.
    private var sniff: Sniff?

    private struct Sniff {
        let address: String
        var held: ByteBuffer
        var clock: TransparentPeekClock
        var timer: Scheduled<Void>?
        /// What the peek saw, once it decided (nil while it waits: every decision has one).
        var outcome: TransparentStats.Peek?
    }

    package init(env: ProxyEnvironment, admission: ClientAdmission.Verdict) {
        self.env = env
        self.admission = admission
        self.logger = env.logger
        self.machine = SOCKSHandshake(settings: .init(requireCredentials: env.authenticator != nil, sniff: env.configuration.socksSniff))
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if let remote = context.channel.remoteAddress {
            client = remote.endpointText
            logger[metadataKey: "client"] = "\(client)"
        }
        if context.channel.isActive {
            startDeadline(context: context)
            context.read()
        }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        sniff?.timer?.cancel()
        sniff?.timer = nil
        self.context = nil
    }

    package func channelActive(context: ChannelHandlerContext) {
        startDeadline(context: context)
        context.read()
        context.fireChannelActive()
    }

    private func startDeadline(context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let timeout = env.configuration.headerTimeout
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak self] in
            guard let self, !self.done, let context = self.context else { return }
            self.logger.debug("SOCKS handshake timed out", metadata: ["timeout_ms": "\(timeout.milliseconds)"])
            if var record = self.record {
                record.fail(ProxyError(.requestTimeout, "no SOCKS handshake within --header-timeout"))
                self.finished(record)
            }
            self.done = true
            context.close(promise: nil)
        }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        guard !done else { return }
        if sniff != nil {
            // Granted already: the client's first bytes, peeked, then relayed.
            sniff!.held.writeBuffer(&bytes)
            peekStep(context: context)
            return
        }
        if let error = admission.error {
            // Refused at accept (ACL, limits: counted and logged there): in the client's protocol.
            let first = bytes.readableBytesView.first
            let reply: [UInt8] = first == 0x05 ? [0x05, 0xFF] : first == 0x04 ? [0x00, 0x5B, 0, 0, 0, 0, 0, 0] : []
            finish(SOCKSHandshake.Output(reply: reply, step: .close(reason: error.message)))
            return
        }
        run(machine.received(bytes.readableBytesView))
    }

    package func channelInactive(context: ChannelHandlerContext) {
        sniff?.timer?.cancel()
        sniff?.timer = nil
        if !done, var record {
            done = true
            record.fail(ProxyError(.requestTimeout, "client closed the connection before the SOCKS reply"))
            finished(record)
        }
        done = true
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: - the handshake's steps

    private func run(_ output: SOCKSHandshake.Output) {
        guard let context, !done else { return }
        switch output.step {
        case .needMore:
            write(output.reply, context: context)
            context.read()
        case .verify(let username, let password):
            write(output.reply, context: context)
            verify(ProxyCredentials(user: username, password: password), context: context)
        case .connect(let request):
            write(output.reply, context: context)
            dial(request, context: context)
        case .sniff(let request):
            write(output.reply, context: context)
            startSniff(request, context: context)
        case .tunnel, .close:
            finish(output)
        }
    }

    private func write(_ reply: [UInt8], context: ChannelHandlerContext) {
        guard !reply.isEmpty else { return }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: reply)), promise: nil)
    }

    /// Writes a refusal's reply, logs what has a destination, and closes.
    private func finish(_ output: SOCKSHandshake.Output) {
        guard let context, !done else { return }
        done = true
        if case .close(let reason) = output.step {
            logger.debug("SOCKS connection refused", metadata: ["reason": "\(reason)"])
        }
        let channel = context.channel
        if output.reply.isEmpty {
            channel.close(promise: nil)
        } else {
            context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(bytes: output.reply))).assumeIsolated().whenComplete { _ in
                channel.close(promise: nil)
            }
        }
    }

    private func verify(_ credentials: ProxyCredentials, context: ChannelHandlerContext) {
        guard let authenticator = env.authenticator else {
            return run(machine.credentialsChecked(false))
        }
        authenticator.verify(credentials, on: context.eventLoop).assumeIsolated().whenComplete { result in
            var valid = false
            if case .success(.allowed) = result { valid = true }
            if case .success(.denied(_, let reason)) = result {
                self.logger.info("SOCKS credentials refused", metadata: ["reason": "\(reason)"])
            }
            self.run(self.machine.credentialsChecked(valid))
        }
    }

    private func dial(_ request: SOCKSRequest, context: ChannelHandlerContext) {
        var record = AccessLogRecord(kind: .tunnel, client: client, method: request.version == .v5 ? "SOCKS5" : "SOCKS4")
        record.scheme = "tcp"
        record.user = request.user.flatMap { request.version == .v5 ? $0 : nil }
        record.port = request.port
        let host: String
        switch request.destination {
        case .name(let name): host = name
        case .address(let address): host = "\(address)"
        }
        record.host = host
        if let sniff {
            record.originalDestination = sniff.address
            record.peek = sniff.outcome?.label
        }
        self.record = record
        let allowedPorts = env.configuration.connectPorts
        guard allowedPorts.contains(request.port) else {
            return refuse(ProxyError.connectPortDenied(request.port, allowed: allowedPorts))
        }
        env.connector.connect(
            host: host, port: request.port, tls: nil, avoiding: [], on: context.eventLoop,
            channelInitializer: { channel in channel.eventLoop.makeSucceededVoidFuture() }
        ).assumeIsolated().whenComplete { result in
            switch result {
            case .success(let connected):
                guard !self.done, let context = self.context, context.channel.isActive else {
                    connected.channel.close(promise: nil)
                    return
                }
                record.dialedIP = connected.address.ipAddress
                record.source = connected.source.rawValue
                record.resolveMs = connected.resolveTime.milliseconds
                record.connectMs = connected.connectTime.milliseconds
                record.status = 200
                let local = connected.channel.localAddress
                let bound = local.flatMap { address in address.ipAddress.flatMap(IPAddress.init).map { ($0, address.port ?? 0) } }
                let output = self.machine.connected(bound: bound)
                self.write(output.reply, context: context)
                self.install(upstream: connected.channel, record: record, context: context)
            case .failure(let error):
                self.refuse(error as? ProxyError ?? ProxyError(.connectFailed, "cannot connect to \(host): \(error)"))
            }
        }
    }

    private func refuse(_ error: ProxyError) {
        guard !done, var record else { return }
        record.fail(error)
        finished(record)
        finish(machine.connectFailed(error.kind, reason: error.message))
    }

    private func finished(_ record: AccessLogRecord) {
        var record = record
        record.totalMs = (NIODeadline.now() - started).milliseconds
        env.finished(record)
        self.record = nil
    }

    private func install(upstream: any Channel, record: AccessLogRecord, context: ChannelHandlerContext) {
        done = true
        deadline?.cancel()
        deadline = nil
        self.record = nil
        let held = sniff?.held
        sniff = nil
        TunnelSwitch.relay(from: context, to: upstream, clientBytes: held.flatMap { $0.readableBytes > 0 ? $0 : nil }, record: record, started: started, env: env)
    }

    // MARK: - socks-sniff

    private func startSniff(_ request: SOCKSRequest, context: ChannelHandlerContext) {
        let configuration = env.configuration
        sniff = Sniff(
            address: "\(request.destination):\(request.port)",
            held: context.channel.allocator.buffer(capacity: 0),
            clock: TransparentPeekClock(
                started: .now(), silentTimeout: configuration.transparentPeekTimeout,
                helloTimeout: configuration.transparentHelloTimeout, fallback: .original
            )
        )
        peekStep(context: context)
    }

    /// Classifies what the client sent since the grant, at `now`: waits (reading, with the timer
    /// at the clock's deadline), or ends the peek with the name found, if any.
    private func peekStep(context: ChannelHandlerContext) {
        guard var sniff, sniff.outcome == nil, !done else { return }
        let (step, outcome) = sniff.clock.step(TransparentPeek.classify(sniff.held.readableBytesView), received: sniff.held.readableBytes, now: .now())
        sniff.timer?.cancel()
        sniff.timer = nil
        let name: String?
        switch step {
        case .wait:
            sniff.timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: sniff.clock.deadline) { [weak self] in
                self?.peekStep(context: context)
            }
            self.sniff = sniff
            context.read()
            return
        case .resolve(let found, _):
            name = found
        case .relayOriginal, .refuse:
            name = nil
        }
        sniff.outcome = outcome ?? .unknown
        self.sniff = sniff
        logger.debug("SOCKS CONNECT sniffed", metadata: ["peek": "\(outcome?.label ?? "-")", "name": "\(name ?? "-")"])
        run(machine.sniffed(name: name))
    }
}

@available(*, unavailable)
extension SOCKSConnectionHandler: Sendable {}

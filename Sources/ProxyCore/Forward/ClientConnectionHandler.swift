import Logging
import NIOCore
import NIOHTTP1

/// Drives one client connection: absolute-form requests forwarded over pooled upstream connections,
/// CONNECT tunnels and HTTP upgrades handed to glue handlers. Requests are served one at a time in
/// order (pipelined requests wait in `queued`); reading from the client stops whenever the upstream
/// cannot take more (backpressure), and upstream reads stop while the client cannot take more.
final class ClientConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum Mode {
        case http
        /// Waiting for the CONNECT target; nothing is read meanwhile.
        case connectingTunnel
        /// HTTP handlers are being removed; raw bytes are kept in `rawPending`.
        case switching
        case closing
    }

    private let env: ProxyEnvironment
    private let pool: UpstreamPool
    private let observer: ClientActivityObserver
    private var logger: Logger
    private var context: ChannelHandlerContext?
    private var clientAddress = "?"

    private var mode = Mode.http
    private var current: Exchange?
    private var queued = CircularBuffer<HTTPServerRequestPart>()
    private var rawPending: [NIOAny] = []
    private var pendingRead = false
    private var closeAfterExchange = false
    private var wait = Wait.none
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?
    private lazy var onRequestBytes: () -> Void = { [weak self] in self?.requestStarted() }
    /// Completes when the last response's end has been written to the socket.
    private var lastResponseWrite: EventLoopFuture<Void>?

    init(env: ProxyEnvironment, pool: UpstreamPool, observer: ClientActivityObserver) {
        self.env = env
        self.pool = pool
        self.observer = observer
        self.logger = env.logger
    }

    // MARK: lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if let remote = context.channel.remoteAddress {
            clientAddress = Self.format(remote)
            logger[metadataKey: "client"] = "\(clientAddress)"
        }
        if context.channel.isActive { becameIdle(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopTimer()
        observer.disarm()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        becameIdle(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        mode = .closing
        stopTimer()
        if let exchange = current {
            current = nil
            exchange.stopWatchingUpstream()
            if let upstream = exchange.upstream {
                upstream.delegate = nil
                upstream.close()
            }
            if exchange.record.error == nil {
                exchange.record.error = exchange.responseComplete ? nil : "client closed the connection"
            }
            finishRecord(exchange)
        }
        queued.removeAll()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            closeAfterExchange = true
            if current == nil && queued.isEmpty && mode == .http {
                // Idle for us, but the last response may still be queued behind a slow reader.
                closeAfterResponseIsWritten(context: context)
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Already answered (and closing): the decoder may still trip over the bytes that followed
        // the rejected request in the same read; they get no second answer.
        guard mode != .closing else { return }
        if let parserError = error as? HTTPParserError {
            let proxyError = RequestParseFailure.proxyError(for: parserError, requestLineLength: observer.requestLineLength)
            if let exchange = current, exchange.responseStarted {
                closeNow(context: context)
            } else {
                failExchangeOrConnection(context: context, error: proxyError)
            }
            return
        }
        // Resets and other I/O errors: nothing useful can be said to the client.
        closeNow(context: context)
    }

    // MARK: inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch mode {
        case .switching:
            rawPending.append(data)
            return
        case .closing:
            return
        case .connectingTunnel:
            // Only the `.end` of the CONNECT request: the decoder stops parsing after a CONNECT
            // head and keeps any payload until it is removed (then we are `.switching`).
            return
        case .http:
            break
        }
        let part = unwrapInboundIn(data)
        if !queued.isEmpty || (current?.requestComplete ?? false) {
            queued.append(part)
            return
        }
        handle(part, context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        current?.upstream?.flush()
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        current?.upstream?.setReadAllowed(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if readAllowed {
            context.read()
        } else {
            pendingRead = true
        }
    }

    private var readAllowed: Bool {
        switch mode {
        case .http:
            guard queued.isEmpty else { return false }
            guard let exchange = current else { return true }
            // After an upgrade request the decoder has stopped parsing; more reads would only
            // grow its buffer until the origin answers.
            if exchange.requestComplete { return !exchange.request.isUpgrade }
            guard let upstream = exchange.upstream else { return exchange.buffered.isEmpty }
            return upstream.isWritable
        case .connectingTunnel, .closing:
            return false
        case .switching:
            return true
        }
    }

    private func resumeReadingIfAllowed() {
        if pendingRead && readAllowed, let context {
            pendingRead = false
            context.read()
        }
    }

    private func handle(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch part {
        case .head(let head):
            startExchange(head, context: context)
        case .body(let buffer):
            guard let exchange = current else { return }
            exchange.record.bytesUp += buffer.readableBytes
            if let upstream = exchange.upstream {
                upstream.write(.body(.byteBuffer(buffer)))
                armResponseTimer(exchange)
            } else {
                exchange.buffered.append(part)
            }
        case .end(let trailers):
            guard let exchange = current else { return }
            exchange.requestComplete = true
            if let upstream = exchange.upstream {
                upstream.write(.end(exchange.request.framing == .chunked ? MessageFraming.forwardableTrailers(trailers) : nil))
                upstream.flush()
                armResponseTimer(exchange)
            } else {
                exchange.buffered.append(part)
            }
            if exchange.responseComplete { finishExchange(exchange, context: context) }
        }
    }

    // MARK: forwarding

    private func startExchange(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        cancelTimer()
        observer.disarm()
        if head.method == .CONNECT {
            startTunnel(head, context: context)
            return
        }
        var record = AccessLogRecord(kind: .request, client: clientAddress, method: head.method.rawValue)
        let target: RequestTarget
        let rewritten: MessageRewriter.RewrittenRequest
        do {
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
            if env.accessLog.isEnabled {
                record.path = String(target.pathAndQuery.utf8.prefix { $0 != UInt8(ascii: "?") }) ?? target.pathAndQuery
            }
            if MessageRewriter.viaContains(head.headers, pseudonym: env.via.pseudonym) {
                throw ProxyError.loop(head.headers[canonicalForm: "via"].joined(separator: ", "))
            }
            rewritten = try MessageRewriter.rewriteRequest(head, target: target, via: env.via)
            if (head.method == .TRACE || head.method == .OPTIONS) && MessageRewriter.maxForwards(head.headers) == 0 {
                // RFC 9110 §7.6.2: the last recipient answers.
                record.status = 200
                respondLocally(LocalAnswer.forMaxForwardsZero(head, via: env.via), record: record, context: context)
                return
            }
        } catch let error as ProxyError {
            record.error = error.message
            respondWithError(error, record: record, started: .now(), context: context)
            return
        } catch {
            preconditionFailure("unexpected error \(error)")
        }

        let route = UpstreamRoute.forRequest(target, configuration: env.configuration)
        record.tls = route.tls != nil
        let exchange = Exchange(clientHead: head, target: target, route: route, request: rewritten, record: record)
        current = exchange
        if !head.isKeepAlive || env.isDraining { closeAfterExchange = true }

        if let pooled = pool.take(exchange.poolKey) {
            exchange.record.reused = true
            exchange.record.source = "pool"
            exchange.record.dialedIP = pooled.dialedAddress?.ipAddress
            attach(pooled, to: exchange)
        } else {
            connectUpstream(for: exchange, context: context)
        }
    }

    private func connectUpstream(for exchange: Exchange, avoiding: Set<String> = [], context: ChannelHandlerContext) {
        let key = exchange.poolKey
        env.connector.connect(
            host: exchange.route.host,
            port: exchange.route.port,
            tls: exchange.route.tls,
            avoiding: avoiding,
            on: context.eventLoop,
            channelInitializer: { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    var encoderConfiguration = HTTPRequestEncoder.Configuration()
                    encoderConfiguration.automaticallySetFramingHeaders = false
                    let responseState = UpstreamResponseState()
                    try sync.addHandler(HTTPRequestEncoder(configuration: encoderConfiguration))
                    try sync.addHandler(ByteToMessageHandler(UpstreamResponseDecoder(state: responseState)))
                    try sync.addHandler(UpstreamHTTPConnection(key: key, responseState: responseState))
                }
            }
        ).assumeIsolated().whenComplete { result in
            switch result {
            case .success(let connected):
                let connection = try? connected.channel.pipeline.syncOperations.handler(type: UpstreamHTTPConnection.self)
                guard let connection, self.current === exchange, self.mode == .http else {
                    connected.channel.close(promise: nil)
                    return
                }
                connection.dialedAddress = connected.address
                exchange.record.dialedIP = connected.address.ipAddress
                exchange.record.source = connected.source.rawValue
                exchange.record.resolveMs = connected.resolveTime.milliseconds
                exchange.record.connectMs = connected.connectTime.milliseconds
                exchange.record.tlsMs = connected.tls?.duration.milliseconds
                exchange.record.tlsResumed = connected.tls?.resumed
                self.attach(connection, to: exchange)
            case .failure(let error):
                guard self.current === exchange, let context = self.context else { return }
                let proxyError = error as? ProxyError ?? ProxyError(.connectFailed, "cannot connect to \(exchange.target.host): \(error)")
                self.logger.debug(
                    "upstream connect failed",
                    metadata: ["proxy.host": "\(exchange.target.host)", "error": "\(proxyError.shortDescription)"]
                )
                self.failExchangeOrConnection(context: context, error: proxyError)
            }
        }
    }

    private func attach(_ connection: UpstreamHTTPConnection, to exchange: Exchange) {
        connection.delegate = self
        connection.exchanges += 1
        connection.setReadAllowed(context?.channel.isWritable ?? true)
        exchange.upstream = connection
        connection.write(.head(exchange.request.head))
        for part in exchange.buffered {
            switch part {
            case .head: break
            case .body(let buffer): connection.write(.body(.byteBuffer(buffer)))
            case .end(let trailers):
                connection.write(.end(exchange.request.framing == .chunked ? MessageFraming.forwardableTrailers(trailers) : nil))
            }
        }
        exchange.buffered.removeAll()
        connection.flush()
        armResponseTimer(exchange)
        resumeReadingIfAllowed()
    }

    /// Notes upstream progress (request bytes sent or response bytes received). The exchange fails
    /// with 504 after `upstreamTimeout` without progress.
    private func armResponseTimer(_ exchange: Exchange) {
        guard let context else { return }
        exchange.lastUpstreamActivity = context.eventLoop.now
        exchange.watchingUpstream = true
        ensureTimer(by: exchange.lastUpstreamActivity + env.configuration.upstreamTimeout, context: context)
    }

    /// The upstream was silent for the upstream timeout while the exchange waited for it.
    private func upstreamTimedOut(_ exchange: Exchange, context: ChannelHandlerContext) {
        exchange.stopWatchingUpstream()
        let timeout = env.configuration.upstreamTimeout
        let error = ProxyError(
            .upstreamTimeout,
            exchange.responseStarted
                ? "\(exchange.target.host) stopped sending the response for \(timeout.milliseconds) ms"
                : "\(exchange.target.host) did not answer within \(timeout.milliseconds) ms"
        )
        if let upstream = exchange.upstream {
            upstream.delegate = nil
            upstream.close()
            exchange.upstream = nil
        }
        failExchangeOrConnection(context: context, error: error)
    }

    /// Ends the current exchange (or the connection) with `error`: an error response when nothing was
    /// sent yet, otherwise an abrupt close (the client sees a truncated response, never a wrong one).
    private func failExchangeOrConnection(context: ChannelHandlerContext, error: ProxyError) {
        guard let exchange = current else {
            var record = AccessLogRecord(kind: .request, client: clientAddress, method: "-")
            record.error = error.message
            respondWithError(error, record: record, started: .now(), context: context)
            return
        }
        exchange.stopWatchingUpstream()
        if let upstream = exchange.upstream {
            upstream.delegate = nil
            upstream.close()
            exchange.upstream = nil
        }
        current = nil
        exchange.record.error = error.message
        if exchange.responseStarted {
            finishRecord(exchange)
            closeNow(context: context)
        } else {
            respondWithError(error, record: exchange.record, started: exchange.started, context: context)
        }
    }

    /// Writes a short text error response, logs it, and closes the connection: the request body (if
    /// any) was not consumed, so the connection cannot carry another request.
    private func respondWithError(_ error: ProxyError, record: AccessLogRecord, started: NIODeadline, context: ChannelHandlerContext) {
        mode = .closing
        queued.removeAll()
        var body = context.channel.allocator.buffer(capacity: error.message.utf8.count + 1)
        body.writeString(error.message)
        body.writeString("\n")
        var head = HTTPResponseHead(version: .http1_1, status: error.status)
        head.headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        head.headers.add(name: "Content-Length", value: String(body.readableBytes))
        head.headers.add(name: "Connection", value: "close")
        head.headers.add(name: "Cache-Control", value: "no-store")
        head.headers.add(name: "X-Proxy-Error", value: error.shortDescription)
        head.headers.add(name: "X-Content-Type-Options", value: "nosniff")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
        var record = record
        record.status = Int(error.status.code)
        record.bytesDown = body.readableBytes
        record.totalMs = (NIODeadline.now() - started).milliseconds
        env.accessLog.write(record)
        logger.debug("request failed", metadata: ["status": "\(error.status.code)", "error": "\(error.shortDescription)"])
    }

    /// Writes a response the proxy gives itself, logs it, and closes after it: the request's body
    /// (if any) is not read, so the connection cannot carry another request.
    private func respondLocally(_ answer: LocalAnswer, record: AccessLogRecord, context: ChannelHandlerContext) {
        mode = .closing
        queued.removeAll()
        var head = answer.head
        var body = context.channel.allocator.buffer(capacity: answer.body.utf8.count)
        body.writeString(answer.body)
        head.headers.add(name: "Content-Length", value: String(body.readableBytes))
        head.headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if body.readableBytes > 0 { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
        var record = record
        record.bytesDown = body.readableBytes
        record.totalMs = 0
        env.accessLog.write(record)
    }

    private func closeNow(context: ChannelHandlerContext) {
        mode = .closing
        context.close(promise: nil)
    }

    private func finishRecord(_ exchange: Exchange) {
        guard env.accessLog.isEnabled else { return }
        exchange.record.totalMs = (NIODeadline.now() - exchange.started).milliseconds
        env.accessLog.write(exchange.record)
    }

    /// Both directions are done: log, return the upstream connection to the pool when it can be
    /// reused, and move on to the next request (or close).
    private func finishExchange(_ exchange: Exchange, context: ChannelHandlerContext) {
        guard exchange.requestComplete, exchange.responseComplete, current === exchange else { return }
        current = nil
        exchange.stopWatchingUpstream()
        finishRecord(exchange)
        if let upstream = exchange.upstream {
            exchange.upstream = nil
            if let response = exchange.response, !response.upstreamWillClose {
                upstream.release(to: pool)
            } else {
                upstream.delegate = nil
                upstream.close()
            }
        }
        if closeAfterExchange || (exchange.response?.closeClient ?? true) {
            closeAfterResponseIsWritten(context: context)
            return
        }
        becameIdle(context: context)
        while current == nil || !(current!.requestComplete), let part = queued.popFirst() {
            handle(part, context: context)
            if mode != .http { return }
        }
        resumeReadingIfAllowed()
    }

    /// Finishes an exchange whose response ended before the client sent its whole request (e.g. the
    /// origin answered 413 early): the rest of the body cannot be skipped safely, so close.
    private func finishEarlyResponse(_ exchange: Exchange, context: ChannelHandlerContext) {
        closeAfterExchange = true
        current = nil
        exchange.stopWatchingUpstream()
        finishRecord(exchange)
        if let upstream = exchange.upstream {
            upstream.delegate = nil
            upstream.close()
        }
        closeAfterResponseIsWritten(context: context)
    }

    /// Closes once the response's last bytes are on the wire: `close` discards writes still queued
    /// behind a slow client, which would truncate a response that the origin sent completely.
    private func closeAfterResponseIsWritten(context: ChannelHandlerContext) {
        mode = .closing
        guard let written = lastResponseWrite else {
            context.close(promise: nil)
            return
        }
        lastResponseWrite = nil
        written.assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    // MARK: timers

    /// Waiting for the next request on a kept-alive connection (closed silently after the idle
    /// timeout), then, once its first bytes arrived, for the rest of its head (408 after the header
    /// timeout).
    private enum Wait {
        case none
        case nextRequest(NIODeadline)
        case requestHead(NIODeadline)

        var deadline: NIODeadline? {
            switch self {
            case .none: nil
            case .nextRequest(let deadline), .requestHead(let deadline): deadline
            }
        }
    }

    private func becameIdle(context: ChannelHandlerContext) {
        setWait(.nextRequest(context.eventLoop.now + env.configuration.clientIdleTimeout), context: context)
        observer.arm(onRequestBytes)
    }

    /// The first bytes of a request arrived: the head must be complete within the header timeout.
    private func requestStarted() {
        guard let context, current == nil else { return }
        setWait(.requestHead(context.eventLoop.now + env.configuration.headerTimeout), context: context)
    }

    /// One scheduled task per connection serves every wait: the idle and header waits between
    /// requests, and the upstream silence of the current exchange. It is not rescheduled per request
    /// or per body part: deadlines only move later, so the task fires at the earliest deadline it
    /// was set for and, when that has moved, re-arms for the current one. A busy keep-alive
    /// connection costs no timer operations per request.
    private func setWait(_ newWait: Wait, context: ChannelHandlerContext) {
        wait = newWait
        guard let deadline = newWait.deadline else { return }
        ensureTimer(by: deadline, context: context)
    }

    /// Makes sure the timer fires no later than `deadline`.
    private func ensureTimer(by deadline: NIODeadline, context: ChannelHandlerContext) {
        if let pending = timerDeadline, pending <= deadline { return }
        timer?.cancel()
        scheduleTimer(at: deadline, context: context)
    }

    private func scheduleTimer(at deadline: NIODeadline, context: ChannelHandlerContext) {
        timerDeadline = deadline
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.timerFired()
        }
    }

    private func timerFired() {
        timer = nil
        timerDeadline = nil
        guard let context, mode == .http else { return }
        let now = context.eventLoop.now
        if let exchange = current {
            guard exchange.watchingUpstream else { return }
            let due = exchange.lastUpstreamActivity + env.configuration.upstreamTimeout
            if due > now {
                scheduleTimer(at: due, context: context)
            } else {
                upstreamTimedOut(exchange, context: context)
            }
            return
        }
        guard let deadline = wait.deadline else { return }
        if deadline > now {
            scheduleTimer(at: deadline, context: context)
            return
        }
        switch wait {
        case .none:
            return
        case .nextRequest:
            closeNow(context: context)
        case .requestHead:
            respondWithError(
                ProxyError(.requestTimeout, "the request head was not received within \(env.configuration.headerTimeout.milliseconds) ms"),
                record: AccessLogRecord(kind: .request, client: clientAddress, method: "-"),
                started: .now(),
                context: context
            )
        }
    }

    /// An exchange started: nothing to wait for (the pending task, if any, finds nothing to do).
    private func cancelTimer() {
        wait = .none
    }

    private func stopTimer() {
        wait = .none
        timer?.cancel()
        timer = nil
        timerDeadline = nil
    }

    /// Tunnel reads grow from 2 KiB up to 512 KiB while they keep filling the buffer. NIO pools up to
    /// `tunnelReadsPerTurn` receive buffers per channel and never shrinks them, so these two bound
    /// what a tunnel keeps after a bulk transfer (1 MiB per side at most). Measured on the 1 GiB
    /// tunnel benchmark: 512 KiB × 2 moves as fast as 1 MiB × 4 (both at the copy ceiling of the
    /// bench machine), 256 KiB and below are slower, and a flush per read is slower still.
    static let tunnelReadAllocator = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 512 * 1024)
    static let tunnelReadsPerTurn: UInt = 2

    static func format(_ address: SocketAddress) -> String {
        guard let ip = address.ipAddress, let port = address.port else { return "\(address)" }
        return address.protocol == .inet6 ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }
}

// MARK: - upstream events

extension ClientConnectionHandler: UpstreamHTTPDelegate {
    func upstream(_ connection: UpstreamHTTPConnection, received part: HTTPClientResponsePart) {
        guard let exchange = current, exchange.upstream === connection, let context else {
            connection.delegate = nil
            connection.close()
            return
        }
        exchange.sawResponseBytes = true
        switch part {
        case .head(let head):
            let code = head.status.code
            if (100..<200).contains(code) && code != 101 {
                // Interim responses (100 Continue, 103 Early Hints) go to HTTP/1.1 clients as they are.
                guard exchange.clientHead.version.minor >= 1 else { return }
                var interim = HTTPResponseHead(version: .http1_1, status: head.status)
                for (name, value) in head.headers where !MessageRewriter.isHopByHop(name) {
                    interim.headers.add(name: name, value: value)
                }
                context.write(wrapOutboundOut(.head(interim)), promise: nil)
                armResponseTimer(exchange)
                return
            }
            let isUpgrade = exchange.request.isUpgrade && code == 101
            let response: MessageRewriter.RewrittenResponse
            do throws(ProxyError) {
                if code == 101 && !isUpgrade {
                    throw ProxyError(.invalidResponse, "\(exchange.target.host) switched protocols (101) without being asked to")
                }
                response = try MessageRewriter.rewriteResponse(
                    head,
                    requestMethod: exchange.clientHead.method,
                    clientVersion: exchange.clientHead.version,
                    clientKeepAlive: exchange.clientHead.isKeepAlive && !closeAfterExchange,
                    isUpgradeResponse: isUpgrade,
                    via: env.via
                )
            } catch {
                failExchangeOrConnection(context: context, error: error)
                return
            }
            exchange.response = response
            exchange.record.status = Int(code)
            if env.accessLog.isEnabled {
                exchange.record.ttfbMs = (NIODeadline.now() - exchange.started).milliseconds
            }
            if exchange.request.isUpgrade && !isUpgrade {
                // The decoder stopped parsing after the upgrade request; this connection cannot
                // carry another request.
                closeAfterExchange = true
            }
            context.write(wrapOutboundOut(.head(response.head)), promise: nil)
            if isUpgrade {
                context.flush()
                switchToUpgradedTunnel(exchange, connection: connection, context: context)
                return
            }
            armResponseTimer(exchange)
        case .body(let buffer):
            exchange.record.bytesDown += buffer.readableBytes
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            armResponseTimer(exchange)
        case .end(let trailers):
            exchange.responseComplete = true
            exchange.stopWatchingUpstream()
            let forwardTrailers = exchange.response?.clientFraming == .chunked ? MessageFraming.forwardableTrailers(trailers) : nil
            let endWritten = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(.end(forwardTrailers)), promise: endWritten)
            lastResponseWrite = endWritten.futureResult
            if exchange.requestComplete {
                finishExchange(exchange, context: context)
            } else {
                finishEarlyResponse(exchange, context: context)
            }
        }
    }

    func upstreamReadComplete(_ connection: UpstreamHTTPConnection) {
        context?.flush()
    }

    func upstreamWritabilityChanged(_ connection: UpstreamHTTPConnection) {
        resumeReadingIfAllowed()
    }

    func upstreamClosed(_ connection: UpstreamHTTPConnection, error: (any Error)?) {
        guard let exchange = current, exchange.upstream === connection, let context else { return }
        exchange.upstream = nil
        if exchange.responseComplete { return }
        if let error, let reason = RequestParseFailure.invalidResponseReason(error) {
            // The origin broke HTTP framing: not the address's fault, and not worth a retry.
            failExchangeOrConnection(
                context: context,
                error: ProxyError(.invalidResponse, "\(exchange.target.host) sent an invalid response: \(reason)")
            )
            return
        }
        if !exchange.sawResponseBytes {
            // Closed or reset before any response byte. On a fresh connection, or with a reset, the
            // address is at fault: it goes into back-off and the retry avoids it. A pooled
            // connection closed cleanly is the keep-alive race (the origin dropped an idle
            // connection just as we reused it), which says nothing about the address.
            let pooled = connection.exchanges > 1
            var failedIP: String?
            if !pooled || error != nil, let address = connection.dialedAddress {
                env.connector.health?.recordFailure(address, kind: UpstreamFailureKind(connectionError: error))
                failedIP = address.ipAddress
            }
            if !exchange.retried && exchange.isSafeToRetry {
                // Idempotent and bodiless: sent again once, on another address when there is one.
                exchange.retried = true
                exchange.record.reused = false
                exchange.stopWatchingUpstream()
                if exchange.requestComplete { exchange.buffered = [.end(nil)] }
                logger.debug(
                    "upstream closed before answering; retrying on a new connection",
                    metadata: [
                        "proxy.host": "\(exchange.target.host)",
                        "upstream.ip": "\(connection.dialedAddress?.ipAddress ?? "?")",
                        "pooled": "\(pooled)",
                    ]
                )
                connectUpstream(for: exchange, avoiding: failedIP.map { [$0] } ?? [], context: context)
                return
            }
        }
        let reason = error.map { " (\(UpstreamConnector.shortReason($0)))" } ?? ""
        failExchangeOrConnection(
            context: context,
            error: ProxyError(
                .upstreamClosed,
                exchange.responseStarted
                    ? "\(exchange.target.host) closed the connection mid-response\(reason)"
                    : "\(exchange.target.host) closed the connection without answering\(reason)"
            )
        )
    }
}

// MARK: - tunnels

extension ClientConnectionHandler {
    private func startTunnel(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let started = NIODeadline.now()
        var record = AccessLogRecord(kind: .tunnel, client: clientAddress, method: "CONNECT")
        let target: RequestTarget
        do {
            target = try RequestTarget.parseConnectAuthority(head.uri)
            record.scheme = "tcp"
            record.host = target.host
            record.port = target.port
            let allowedPorts = env.configuration.connectPorts
            guard allowedPorts.contains(target.port) else {
                throw ProxyError.connectPortDenied(target.port, allowed: allowedPorts)
            }
            if MessageRewriter.viaContains(head.headers, pseudonym: env.via.pseudonym) {
                throw ProxyError.loop(head.headers[canonicalForm: "via"].joined(separator: ", "))
            }
        } catch let error as ProxyError {
            record.error = error.message
            respondWithError(error, record: record, started: started, context: context)
            return
        } catch {
            preconditionFailure("unexpected error \(error)")
        }

        mode = .connectingTunnel
        env.connector.connect(
            host: target.host,
            port: target.port,
            on: context.eventLoop,
            channelInitializer: { channel in channel.eventLoop.makeSucceededVoidFuture() }
        ).assumeIsolated().whenComplete { result in
            switch result {
            case .success(let connected):
                guard self.mode == .connectingTunnel, let context = self.context else {
                    connected.channel.close(promise: nil)
                    return
                }
                record.dialedIP = connected.address.ipAddress
                record.source = connected.source.rawValue
                record.resolveMs = connected.resolveTime.milliseconds
                record.connectMs = connected.connectTime.milliseconds
                record.status = 200
                self.switchToConnectTunnel(upstream: connected.channel, record: record, started: started, context: context)
            case .failure(let error):
                guard self.mode == .connectingTunnel, let context = self.context else { return }
                let proxyError = error as? ProxyError ?? ProxyError(.connectFailed, "cannot connect to \(target.host): \(error)")
                record.error = proxyError.message
                self.respondWithError(proxyError, record: record, started: started, context: context)
            }
        }
    }

    private func switchToConnectTunnel(upstream: any Channel, record: AccessLogRecord, started: NIODeadline, context: ChannelHandlerContext) {
        mode = .switching
        let pipeline = context.pipeline.syncOperations
        let removals: [EventLoopFuture<Void>] = [
            pipeline.removeHandler(context: (try? pipeline.context(handlerType: HTTPResponseEncoder.self))!),
            pipeline.removeHandler(context: (try? pipeline.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self))!),
        ]
        EventLoopFuture.andAllSucceed(removals, on: context.eventLoop).assumeIsolated().whenComplete { result in
            guard case .success = result, let context = self.context, upstream.isActive else {
                upstream.close(promise: nil)
                self.context?.close(promise: nil)
                return
            }
            var established = context.channel.allocator.buffer(capacity: 64)
            established.writeString("HTTP/1.1 200 Connection established\r\n\r\n")
            context.writeAndFlush(NIOAny(established), promise: nil)
            self.installGlue(upstream: upstream, upstreamRaw: [], record: record, started: started, context: context)
        }
    }

    private func switchToUpgradedTunnel(_ exchange: Exchange, connection: UpstreamHTTPConnection, context: ChannelHandlerContext) {
        mode = .switching
        exchange.stopWatchingUpstream()
        current = nil
        connection.delegate = nil
        connection.startCollecting(expectingEnd: true)
        guard let upstream = connection.channel else {
            closeNow(context: context)
            return
        }
        let clientPipeline = context.pipeline.syncOperations
        let upstreamPipeline = upstream.pipeline.syncOperations
        let removals: [EventLoopFuture<Void>] = [
            clientPipeline.removeHandler(context: (try? clientPipeline.context(handlerType: HTTPResponseEncoder.self))!),
            clientPipeline.removeHandler(context: (try? clientPipeline.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self))!),
            upstreamPipeline.removeHandler(context: (try? upstreamPipeline.context(handlerType: HTTPRequestEncoder.self))!),
            upstreamPipeline.removeHandler(context: (try? upstreamPipeline.context(handlerType: ByteToMessageHandler<UpstreamResponseDecoder>.self))!),
        ]
        var record = exchange.record
        record.kind = .tunnel
        let started = exchange.started
        EventLoopFuture.andAllSucceed(removals, on: context.eventLoop).assumeIsolated().whenComplete { result in
            guard case .success = result, let context = self.context, upstream.isActive else {
                upstream.close(promise: nil)
                self.context?.close(promise: nil)
                return
            }
            let upstreamRaw = connection.takeCollected()
            upstreamPipeline.removeHandler(connection, promise: nil)
            self.installGlue(upstream: upstream, upstreamRaw: upstreamRaw, record: record, started: started, context: context)
        }
    }

    /// Both channels carry raw bytes now: splice them and hand over what arrived during the switch.
    private func installGlue(upstream: any Channel, upstreamRaw: [NIOAny], record: AccessLogRecord, started: NIODeadline, context: ChannelHandlerContext) {
        let accessLog = env.accessLog
        let recorder = TunnelRecorder(record: record, started: started) { accessLog.write($0) }
        let (clientGlue, upstreamGlue) = GlueHandler.matchedPair(recorder: recorder)
        do {
            _ = context.channel.setOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            _ = upstream.setOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            // Bulk transfers through a tunnel want large reads (fewer syscalls per byte); the
            // adaptive allocator only grows a channel's buffer while reads keep filling it, so an
            // idle or interactive tunnel stays small. Fewer reads per event-loop turn bound what
            // one burst can queue on the partner before its writability is checked again.
            for channel in [context.channel, upstream] {
                _ = channel.setOption(ChannelOptions.recvAllocator, value: Self.tunnelReadAllocator)
                _ = channel.setOption(ChannelOptions.maxMessagesPerRead, value: Self.tunnelReadsPerTurn)
            }
            try context.pipeline.syncOperations.addHandler(
                IdleStateHandler(allTimeout: env.configuration.tunnelIdleTimeout),
                position: .after(self)
            )
            try context.pipeline.syncOperations.addHandler(clientGlue, position: .last)
            try upstream.pipeline.syncOperations.addHandler(upstreamGlue)
        } catch {
            upstream.close(promise: nil)
            closeNow(context: context)
            return
        }
        for data in upstreamRaw {
            upstream.pipeline.syncOperations.fireChannelRead(data)
        }
        let clientRaw = rawPending
        rawPending = []
        for data in clientRaw {
            context.fireChannelRead(data)
        }
        upstream.pipeline.syncOperations.fireChannelReadComplete()
        context.fireChannelReadComplete()
        stopTimer()
        observer.disarm()
        context.pipeline.syncOperations.removeHandler(observer, promise: nil)
        let client = context.channel
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        // Reads were held while switching; let both sides start.
        upstream.read()
        client.read()
    }
}

@available(*, unavailable)
extension ClientConnectionHandler: Sendable {}


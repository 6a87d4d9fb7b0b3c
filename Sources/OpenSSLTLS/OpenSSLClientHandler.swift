import NIOCore

/// Originates TLS with OpenSSL on a channel that is already connected (or about to be) to an IP
/// chosen elsewhere, exactly as if it had connected to `serverName`.
///
/// Put it first in the pipeline (closest to the socket); it carries `ByteBuffer`s both ways:
/// plaintext above, ciphertext below. It starts the handshake on `channelActive` (or at
/// `handlerAdded` if the channel is already active), buffers writes until the handshake has
/// completed and the peer is verified, then fires `TLSClientEvent.handshakeCompleted` and
/// encrypts the buffered writes. Failures are fired as `TLSError` through `errorCaught`, and the
/// channel is closed. `close(mode: .all)` sends close_notify before closing; a close_notify from
/// the peer is answered and the channel is closed (so the pipeline sees `channelInactive`).
public final class OpenSSLClientHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private enum State {
        case idle
        case handshaking(timeout: Scheduled<Void>?)
        case active
        case closed
    }

    private typealias BufferedWrite = (data: ByteBuffer, promise: EventLoopPromise<Void>?)

    private let tlsContext: TLSClientContext
    private let serverName: String
    private let port: Int
    private let spkiPins: [String]

    private var state: State = .idle
    private var connection: Result<SSLConnection, TLSError>?
    private var bufferedWrites = MarkedCircularBuffer<BufferedWrite>(initialCapacity: 8)
    private var outputClosed = false
    /// A `close(mode: .output)` requested during the handshake, run once buffered writes are out.
    private var pendingCloseOutput: EventLoopPromise<Void>?? = nil
    private var deliveredSinceReadComplete = false

    /// - Parameters:
    ///   - context: the shared `SSL_CTX` owner (trust, ALPN, session cache).
    ///   - serverName: the ORIGINAL host the client asked for (not the dialed IP): the SNI (omitted
    ///     for IP literals, per RFC 6066) and the identity the certificate must match (DNS SANs for
    ///     names, IP SANs for IP literals).
    ///   - port: the original port; with `serverName` it keys the session cache ("host:port").
    ///   - spkiPins: base64 SHA-256 SPKI hashes; when non-empty, the leaf's must be one of them.
    public init(context: TLSClientContext, serverName: String, port: Int, spkiPins: [String] = []) {
        self.tlsContext = context
        self.serverName = SSLConnection.normalizedHost(serverName)
        self.port = port
        self.spkiPins = spkiPins
    }

    // MARK: Lifecycle

    public func handlerAdded(context: ChannelHandlerContext) {
        do {
            self.connection = .success(
                try SSLConnection(context: self.tlsContext, serverName: self.serverName, port: self.port, spkiPins: self.spkiPins)
            )
        } catch {
            self.connection = .failure(error)
        }
        if context.channel.isActive {
            self.startHandshake(context: context)
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        self.cancelHandshakeTimeout()
        self.state = .closed
        self.failBufferedWrites(ChannelError.ioOnClosedChannel)
        // Free the SSL (and its buffers) now rather than whenever the channel object goes away.
        self.connection = nil
    }

    public func channelActive(context: ChannelHandlerContext) {
        // Forwarded first, so that a failure inside the handshake step is followed by a
        // channelInactive that makes sense to the handlers above.
        context.fireChannelActive()
        self.startHandshake(context: context)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        let previous = self.state
        self.state = .closed
        self.cancelHandshakeTimeout(previous)
        switch previous {
        case .handshaking:
            let error = TLSError.closedDuringHandshake(host: self.serverName)
            self.failBufferedWrites(error)
            context.fireErrorCaught(error)
        case .idle, .active, .closed:
            self.failBufferedWrites(ChannelError.ioOnClosedChannel)
        }
        context.fireChannelInactive()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshaking = self.state, let event = event as? ChannelEvent, event == .inputClosed {
            self.fail(.closedDuringHandshake(host: self.serverName), context: context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Inbound

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .success(let connection) = self.connection else { return }
        let ciphertext = self.unwrapInboundIn(data)
        switch self.state {
        case .closed:
            return
        case .idle, .handshaking, .active:
            do {
                try connection.receiveFromNetwork(ciphertext)
            } catch {
                self.fail(error, context: context)
                return
            }
        }
        switch self.state {
        case .handshaking:
            self.handshakeStep(context: context, connection: connection)
        case .active:
            self.decodeAndDeliver(context: context, connection: connection)
        case .idle, .closed:
            break
        }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        let delivered = self.deliveredSinceReadComplete
        self.deliveredSinceReadComplete = false
        if delivered {
            context.fireChannelReadComplete()
        } else {
            // Only handshake or ticket bytes: without auto-read nobody else would ask for more.
            self.readIfNotAutoRead(context: context)
        }
    }

    // MARK: Outbound

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .closed = self.state {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        if self.outputClosed || self.pendingCloseOutput != nil {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        self.bufferedWrites.append((self.unwrapOutboundIn(data), promise))
    }

    public func flush(context: ChannelHandlerContext) {
        self.bufferedWrites.mark()
        if case .active = self.state, case .success(let connection) = self.connection {
            self.encryptFlushedWrites(context: context, connection: connection)
        }
    }

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch mode {
        case .input:
            promise?.fail(ChannelError.operationUnsupported)
        case .output:
            self.closeOutput(context: context, promise: promise)
        case .all:
            self.closeAll(context: context, promise: promise)
        }
    }

    private func closeAll(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        let previous = self.state
        self.state = .closed
        self.cancelHandshakeTimeout(previous)
        self.failBufferedWrites(ChannelError.ioOnClosedChannel)
        if case .active = previous, !self.outputClosed, case .success(let connection) = self.connection {
            // close_notify, then close without waiting for the peer's (which is allowed, RFC 8446 6.1).
            connection.shutdown()
            self.writeCiphertext(context: context, connection: connection, promise: nil)
        }
        context.close(mode: .all, promise: promise)
    }

    private func closeOutput(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        switch self.state {
        case .idle, .closed:
            context.close(mode: .output, promise: promise)
        case .handshaking:
            if self.pendingCloseOutput != nil || self.outputClosed {
                promise?.fail(ChannelError.outputClosed)
            } else {
                self.pendingCloseOutput = .some(promise)
            }
        case .active:
            if self.outputClosed {
                promise?.fail(ChannelError.outputClosed)
                return
            }
            guard case .success(let connection) = self.connection else { return }
            // Everything already flushed goes out before close_notify; unflushed writes are dropped.
            self.encryptFlushedWrites(context: context, connection: connection)
            guard case .active = self.state else {
                promise?.fail(ChannelError.ioOnClosedChannel)
                return
            }
            self.outputClosed = true
            self.failBufferedWrites(ChannelError.outputClosed)
            connection.shutdown()
            self.writeCiphertext(context: context, connection: connection, promise: nil)
            context.close(mode: .output, promise: promise)
        }
    }

    // MARK: Handshake

    private func startHandshake(context: ChannelHandlerContext) {
        guard case .idle = self.state else { return }
        let connection: SSLConnection
        switch self.connection {
        case .success(let c):
            connection = c
        case .failure(let error):
            self.fail(error, context: context)
            return
        case nil:
            return
        }
        let timeout = self.tlsContext.configuration.handshakeTimeout
        let scheduled = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(timeout)) {
            if case .handshaking = self.state {
                self.fail(.handshakeTimeout(host: self.serverName, after: timeout), context: context)
            }
        }
        self.state = .handshaking(timeout: scheduled)
        self.handshakeStep(context: context, connection: connection)
        if case .handshaking = self.state {
            self.readIfNotAutoRead(context: context)
        }
    }

    private func handshakeStep(context: ChannelHandlerContext, connection: SSLConnection) {
        switch connection.doHandshake() {
        case .wantsMoreData:
            self.writeCiphertext(context: context, connection: connection, promise: nil)
        case .failed(let error):
            self.fail(error, context: context)
        case .complete:
            self.cancelHandshakeTimeout()
            self.state = .active
            self.writeCiphertext(context: context, connection: connection, promise: nil)
            context.fireUserInboundEventTriggered(
                TLSClientEvent.handshakeCompleted(
                    negotiatedProtocol: connection.negotiatedProtocol,
                    resumed: connection.sessionReused,
                    tlsVersion: connection.tlsVersion
                )
            )
            // Application data (or tickets) may have arrived with the server's last flight.
            guard case .active = self.state else { return }
            self.decodeAndDeliver(context: context, connection: connection)
            guard case .active = self.state else { return }
            self.encryptFlushedWrites(context: context, connection: connection)
            if case .active = self.state, let pending = self.pendingCloseOutput {
                self.pendingCloseOutput = nil
                self.closeOutput(context: context, promise: pending)
            }
        }
    }

    // MARK: Data

    private func decodeAndDeliver(context: ChannelHandlerContext, connection: SSLConnection) {
        var plaintext = context.channel.allocator.buffer(capacity: 0)
        let result = connection.read(into: &plaintext)
        // Reading can produce records of our own (e.g. a KeyUpdate answer).
        self.writeCiphertext(context: context, connection: connection, promise: nil)
        if plaintext.readableBytes > 0 {
            self.deliveredSinceReadComplete = true
            context.fireChannelRead(self.wrapInboundOut(plaintext))
        }
        switch result {
        case .data:
            break
        case .closeNotify:
            // Answer the peer's close_notify and close: the pipeline then sees channelInactive.
            guard case .active = self.state else { return }
            if self.deliveredSinceReadComplete {
                self.deliveredSinceReadComplete = false
                context.fireChannelReadComplete()
            }
            self.closeAll(context: context, promise: nil)
        case .failed(let error):
            self.fail(error, context: context)
        }
    }

    private func encryptFlushedWrites(context: ChannelHandlerContext, connection: SSLConnection) {
        guard self.bufferedWrites.hasMark else { return }
        var promises: [EventLoopPromise<Void>] = []
        while self.bufferedWrites.hasMark, let write = self.bufferedWrites.first {
            switch connection.write(write.data) {
            case .complete:
                _ = self.bufferedWrites.removeFirst()
                if let promise = write.promise { promises.append(promise) }
            case .failed(let error):
                self.failEncryption(error, promises: promises, context: context)
                return
            case .wantsMoreData:
                // Memory BIOs never push back and renegotiation is off: this cannot happen.
                let error = TLSError.protocolError(host: self.serverName, reason: "cannot encrypt application data")
                self.failEncryption(error, promises: promises, context: context)
                return
            }
        }
        let combined: EventLoopPromise<Void>?
        switch promises.count {
        case 0: combined = nil
        case 1: combined = promises[0]
        default:
            let promise = context.eventLoop.makePromise(of: Void.self)
            promise.futureResult.assumeIsolated().whenComplete { result in
                switch result {
                case .success: for p in promises { p.succeed() }
                case .failure(let error): for p in promises { p.fail(error) }
                }
            }
            combined = promise
        }
        self.writeCiphertext(context: context, connection: connection, promise: combined)
    }

    private func failEncryption(_ error: TLSError, promises: [EventLoopPromise<Void>], context: ChannelHandlerContext) {
        for promise in promises { promise.fail(error) }
        self.fail(error, context: context)
    }

    // MARK: Helpers

    /// Sends whatever ciphertext OpenSSL produced; completes `promise` after it is written (with
    /// an empty write if there is nothing, to keep ordering).
    private func writeCiphertext(context: ChannelHandlerContext, connection: SSLConnection, promise: EventLoopPromise<Void>?) {
        if let ciphertext = connection.outboundCiphertext(allocator: context.channel.allocator) {
            context.writeAndFlush(self.wrapOutboundOut(ciphertext), promise: promise)
        } else if let promise {
            context.writeAndFlush(self.wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: promise)
        }
    }

    private func fail(_ error: TLSError, context: ChannelHandlerContext) {
        let previous = self.state
        self.state = .closed
        self.cancelHandshakeTimeout(previous)
        if case .success(let connection) = self.connection {
            // Any alert OpenSSL queued tells the server why.
            self.writeCiphertext(context: context, connection: connection, promise: nil)
        }
        self.failBufferedWrites(error)
        if case .some(.some(let promise)) = self.pendingCloseOutput { promise.fail(error) }
        self.pendingCloseOutput = nil
        if case .closed = previous { return }
        context.fireErrorCaught(error)
        context.close(mode: .all, promise: nil)
    }

    private func failBufferedWrites(_ error: any Error) {
        while let write = self.bufferedWrites.popFirst() {
            write.promise?.fail(error)
        }
    }

    private func cancelHandshakeTimeout(_ state: State? = nil) {
        if case .handshaking(let timeout) = state ?? self.state {
            timeout?.cancel()
        }
    }

    private func readIfNotAutoRead(context: ChannelHandlerContext) {
        let autoRead = (try? context.channel.syncOptions?.getOption(ChannelOptions.autoRead)) ?? true
        if !autoRead {
            context.read()
        }
    }
}

@available(*, unavailable)
extension OpenSSLClientHandler: Sendable {}

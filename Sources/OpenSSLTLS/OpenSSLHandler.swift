import NIOCore

/// TLS through OpenSSL on a channel, at either end.
///
/// As a client (`init(context:serverName:port:spkiPins:)`) it originates TLS on a channel that is
/// already connected (or about to be) to an IP chosen elsewhere, exactly as if it had connected to
/// `serverName`. As a server (`init(server:)`) it accepts TLS from a client of the proxy's TLS
/// listener, presenting the certificate the client's SNI names.
///
/// Put it first in the pipeline (closest to the socket); it carries `ByteBuffer`s both ways:
/// plaintext above, ciphertext below. It starts the handshake on `channelActive` (or at
/// `handlerAdded` if the channel is already active), buffers writes until the handshake has
/// completed and the peer is verified, then fires `TLSClientEvent.handshakeCompleted` (a client)
/// or `TLSServerEvent.handshakeCompleted` (a server) and encrypts the buffered writes. Failures
/// are fired as `TLSError` through `errorCaught`, and the channel is closed. `close(mode: .all)`
/// sends close_notify before closing; a close_notify from the peer is answered and the channel is
/// closed (so the pipeline sees `channelInactive`).
public final class OpenSSLHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    enum State {
        case idle
        case handshaking(timeout: Scheduled<Void>?)
        case active
        case closed
    }

    /// Which end of the TLS connection this is.
    enum Role {
        case client(TLSClientContext, port: Int, spkiPins: [String])
        case server(TLSServerContext)
    }

    typealias BufferedWrite = (data: ByteBuffer, promise: EventLoopPromise<Void>?)

    let role: Role
    /// A client: the server's name. A server: the client's address once known (for messages).
    var serverName: String

    var state: State = .idle
    var connection: Result<SSLConnection, TLSError>?
    var bufferedWrites = MarkedCircularBuffer<BufferedWrite>(initialCapacity: 8)
    var outputClosed = false
    /// A `close(mode: .output)` requested during the handshake, run once buffered writes are out.
    var pendingCloseOutput: EventLoopPromise<Void>?? = nil
    var deliveredSinceReadComplete = false
    /// A server: the common name of the client's verified certificate, once the handshake completed.
    public internal(set) var clientCertificateName: String?
    /// A server: told once how the handshake ended (nil: completed), for the listener's counters.
    let onHandshake: ((TLSError?) -> Void)?

    /// A client end.
    /// - Parameters:
    ///   - context: the shared `SSL_CTX` owner (trust, ALPN, session cache).
    ///   - serverName: the ORIGINAL host the client asked for (not the dialed IP): the SNI (omitted
    ///     for IP literals, per RFC 6066) and the identity the certificate must match (DNS SANs for
    ///     names, IP SANs for IP literals).
    ///   - port: the original port; with `serverName` it keys the session cache ("host:port").
    ///   - spkiPins: base64 SHA-256 SPKI hashes; when non-empty, the leaf's must be one of them.
    public init(context: TLSClientContext, serverName: String, port: Int, spkiPins: [String] = []) {
        self.role = .client(context, port: port, spkiPins: spkiPins)
        self.serverName = SSLConnection.normalizedHost(serverName)
        self.onHandshake = nil
    }

    /// A server end: the certificate chosen by SNI from `server`, a client certificate required
    /// when `server` has a client CA. `onHandshake` hears once how the handshake ended (nil: it
    /// completed; an error: it failed, timed out, or the client left first), on the event loop.
    public init(server: TLSServerContext, onHandshake: ((TLSError?) -> Void)? = nil) {
        self.role = .server(server)
        self.serverName = "client"
        self.onHandshake = onHandshake
    }

    var handshakeTimeout: Duration {
        switch self.role {
        case .client(let context, _, _): context.configuration.handshakeTimeout
        case .server(let server): server.configuration.handshakeTimeout
        }
    }

    // MARK: Lifecycle

    public func handlerAdded(context: ChannelHandlerContext) {
        do {
            switch self.role {
            case .client(let client, let port, let spkiPins):
                self.connection = .success(try SSLConnection(context: client, serverName: self.serverName, port: port, spkiPins: spkiPins))
            case .server(let server):
                if let remote = context.channel.remoteAddress { self.serverName = "client \(remote)" }
                self.connection = .success(try SSLConnection(server: server, client: self.serverName))
            }
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
            self.onHandshake?(error)
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
        if ciphertext.readableBytes == 0 {
            // An empty read fired from the head of the pipeline is a handler above asking its own
            // decoder to run over the bytes it holds (a released pipelining hold): pass it on.
            if case .active = self.state {
                self.deliveredSinceReadComplete = true
                context.fireChannelRead(data)
            }
            return
        }
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

    func closeAll(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        let previous = self.state
        self.state = .closed
        self.cancelHandshakeTimeout(previous)
        if case .handshaking = previous { self.onHandshake?(.closedDuringHandshake(host: self.serverName, reason: "closed by the proxy")) }
        self.failBufferedWrites(ChannelError.ioOnClosedChannel)
        if case .active = previous, !self.outputClosed, case .success(let connection) = self.connection {
            // close_notify, then close without waiting for the peer's (which is allowed, RFC 8446 6.1).
            connection.shutdown()
            self.writeCiphertext(context: context, connection: connection, promise: nil)
        }
        context.close(mode: .all, promise: promise)
    }

    func closeOutput(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
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
}

@available(*, unavailable)
extension OpenSSLHandler: Sendable {}

import NIOCore

// The handshake, the record work (decrypting what arrives, encrypting flushed writes) and the
// failure paths of `OpenSSLHandler`.
extension OpenSSLHandler {
    // MARK: Handshake

    func startHandshake(context: ChannelHandlerContext) {
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
        let timeout = self.handshakeTimeout
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

    func handshakeStep(context: ChannelHandlerContext, connection: SSLConnection) {
        switch connection.doHandshake() {
        case .wantsMoreData:
            self.writeCiphertext(context: context, connection: connection, promise: nil)
        case .failed(let error):
            self.fail(error, context: context)
        case .complete:
            self.cancelHandshakeTimeout()
            self.state = .active
            self.writeCiphertext(context: context, connection: connection, promise: nil)
            switch self.role {
            case .client:
                context.fireUserInboundEventTriggered(
                    TLSClientEvent.handshakeCompleted(
                        negotiatedProtocol: connection.negotiatedProtocol,
                        resumed: connection.sessionReused,
                        tlsVersion: connection.tlsVersion
                    )
                )
            case .server:
                self.clientCertificateName = connection.peerCertificateName
                self.onHandshake?(nil)
                context.fireUserInboundEventTriggered(
                    TLSServerEvent.handshakeCompleted(
                        serverName: connection.requestedServerName,
                        clientCertificateName: self.clientCertificateName,
                        tlsVersion: connection.tlsVersion
                    )
                )
            }
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

    func decodeAndDeliver(context: ChannelHandlerContext, connection: SSLConnection) {
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

    func encryptFlushedWrites(context: ChannelHandlerContext, connection: SSLConnection) {
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

    func failEncryption(_ error: TLSError, promises: [EventLoopPromise<Void>], context: ChannelHandlerContext) {
        for promise in promises { promise.fail(error) }
        self.fail(error, context: context)
    }

    // MARK: Helpers

    /// Sends whatever ciphertext OpenSSL produced; completes `promise` after it is written (with
    /// an empty write if there is nothing, to keep ordering).
    func writeCiphertext(context: ChannelHandlerContext, connection: SSLConnection, promise: EventLoopPromise<Void>?) {
        if let ciphertext = connection.outboundCiphertext(allocator: context.channel.allocator) {
            context.writeAndFlush(self.wrapOutboundOut(ciphertext), promise: promise)
        } else if let promise {
            context.writeAndFlush(self.wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: promise)
        }
    }

    func fail(_ error: TLSError, context: ChannelHandlerContext) {
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
        switch previous {
        case .idle, .handshaking: self.onHandshake?(error)
        case .active, .closed: break
        }
        context.fireErrorCaught(error)
        context.close(mode: .all, promise: nil)
    }

    func failBufferedWrites(_ error: any Error) {
        while let write = self.bufferedWrites.popFirst() {
            write.promise?.fail(error)
        }
    }

    func cancelHandshakeTimeout(_ state: State? = nil) {
        if case .handshaking(let timeout) = state ?? self.state {
            timeout?.cancel()
        }
    }

    func readIfNotAutoRead(context: ChannelHandlerContext) {
        let autoRead = (try? context.channel.syncOptions?.getOption(ChannelOptions.autoRead)) ?? true
        if !autoRead {
            context.read()
        }
    }
}

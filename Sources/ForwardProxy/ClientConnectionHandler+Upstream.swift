import HTTP1Codec
import Logging
import NIOCore
import NIOHTTP1
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

// Upstream connections: dialing (or taking a pooled one), the upstream pipeline, and the
// upstream side's events turned into machine events.
extension ClientConnectionHandler {
    func connect(_ route: UpstreamRoute, avoiding: Set<String>, context: ChannelHandlerContext) {
        let key = route.poolKey
        let initializer: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
            channel.eventLoop.makeCompletedFuture {
                try Self.configureUpstreamPipeline(channel, key: key)
            }
        }
        // A plain HTTP request for the parent proxy goes to it in absolute form; TLS goes through a tunnel.
        let dial = route.parent != nil && route.tls == nil
            ? env.connector.connectForwarding(host: route.host, port: route.port, avoiding: avoiding, on: context.eventLoop, channelInitializer: initializer)
            : env.connector.connect(
                host: route.host, port: route.port, tls: route.tls, avoiding: avoiding, on: context.eventLoop, channelInitializer: initializer)
        dial.assumeIsolated().whenComplete { result in
            switch result {
            case .success(let connected):
                guard self.context != nil else {
                    connected.channel.close(promise: nil)
                    return
                }
                // The connect can complete after its exchange failed or the client left: the
                // machine takes the connection (`.attachDialedUpstream`) only while it is wanted.
                self.offered = connected
                self.run(self.machine.upstream(.dialed, now: self.now))
                if let unwanted = self.offered.take() { unwanted.channel.close(promise: nil) }
            case .failure(let error):
                guard self.context != nil else { return }
                let proxyError = error as? ProxyError ?? ProxyError(.connectFailed, "cannot connect to \(route.host): \(error)")
                self.logger.debug(
                    "upstream connect failed",
                    metadata: ["proxy.host": "\(route.host)", "error": "\(proxyError.shortDescription)"]
                )
                self.run(self.machine.upstream(.connectFailed(proxyError), now: self.now))
            }
        }
    }

    /// Attaches the connection the last dial made (`offered`) to the exchange.
    func attachDialed() {
        guard let connected = offered.take() else { return }
        // Each attempt of the connector's Happy Eyeballs gets its own pipeline, so the winner's
        // handler is looked up in the winning channel.
        guard let connection = try? connected.channel.pipeline.syncOperations.handler(type: UpstreamHTTPConnection.self) else {
            // The channel closed and its handlers are gone already (the origin closed it at
            // once): as a close before use.
            connected.channel.close(promise: nil)
            closedBeforeUse(connected.address, error: nil)
            return
        }
        connection.dialedAddress = connected.address
        connection.parentForward = connected.parentForward
        connection.reusable = !connected.bypassedParent
        connection.lease = ConnectionLease(source: connected.source, dialedAt: now, lifetime: connected.answerLifetime)
        attach(
            connection,
            info: UpstreamConnectInfo(
                pooled: false,
                dialedIP: connection.dialedIP,
                source: connected.source.rawValue,
                resolveMs: connected.resolveTime.milliseconds,
                connectMs: connected.connectTime.milliseconds,
                tlsMs: connected.tls?.duration.milliseconds,
                tlsResumed: connected.tls?.resumed,
                writable: connected.channel.isWritable,
                parentForward: connected.parentForward
            )
        )
    }

    /// The handlers of an upstream HTTP/1.1 connection: the codec's response reader (which refuses
    /// bytes nobody asked for) and the connection, which serializes requests itself.
    static func configureUpstreamPipeline(_ channel: any Channel, key: PoolKey) throws {
        let sync = channel.pipeline.syncOperations
        let responseDecoder = UpstreamResponseReader()
        let decoder = ByteToMessageHandler(responseDecoder)
        let connection = UpstreamHTTPConnection(key: key, responseDecoder: responseDecoder)
        connection.decoderHandler = decoder
        try sync.addHandler(decoder)
        try sync.addHandler(connection)
    }

    func attach(_ connection: UpstreamHTTPConnection, info: UpstreamConnectInfo) {
        guard connection.attach(to: self) else {
            // The origin closed the fresh connection between the connect and now, and its close
            // found nobody to tell: nothing was sent, so the request is tried again (once)
            // instead of waiting for the upstream timeout.
            closedBeforeUse(connection.dialedAddress, error: connection.closeError)
            return
        }
        upstream = connection
        run(machine.upstream(.connected(info), now: now))
    }

    private func closedBeforeUse(_ address: SocketAddress?, error: (any Error)?) {
        let dialed = address.map { FailedAddress(address: $0, kind: UpstreamFailureKind(connectionError: error)) }
        logger.debug("upstream closed as soon as it was made", metadata: ["upstream.ip": "\(address?.ipAddress ?? "?")"])
        run(machine.upstream(.closedBeforeUse(dialed: dialed), now: now))
    }
}

// MARK: - the request head

extension ClientConnectionHandler {
    /// Writes a request head to the attached upstream: a client's head from its own kept lines,
    /// any other as NIOHTTP1's head.
    func sendHead(_ head: RequestHead, context: ChannelHandlerContext) {
        guard let upstream else { return }
        guard case .outgoing(let outgoing) = head.storage else {
            upstream.write(.head(head.converted))
            return
        }
        upstream.writeHead(
            outgoing.written(by: &requestHeads, allocator: context.channel.allocator),
            method: outgoing.parsed.methodKind,
            upgradeRequested: outgoing.parsed.isUpgrade,
            chunked: outgoing.isChunked
        )
    }
}

// MARK: - upstream events

extension ClientConnectionHandler: UpstreamHTTPDelegate {
    func upstream(_ connection: UpstreamHTTPConnection, received part: UpstreamResponsePart) {
        guard connection === upstream, context != nil else {
            connection.detach()
            connection.close()
            return
        }
        switch part {
        case .head(let head): run(machine.upstream(.head(ResponseHead(origin: head)), now: now))
        case .body(let buffer): run(machine.upstream(.body(buffer), now: now))
        case .end(let trailers): run(machine.upstream(.end(trailers.map(HeaderFields.init)), now: now))
        }
    }

    func upstreamReadComplete(_ connection: UpstreamHTTPConnection) {
        context?.flush()
    }

    func upstreamWritabilityChanged(_ connection: UpstreamHTTPConnection) {
        guard connection === upstream else { return }
        run(machine.upstream(.writabilityChanged(connection.isWritable), now: now))
    }

    func upstreamClosed(_ connection: UpstreamHTTPConnection, error: (any Error)?) {
        guard connection === upstream else { return }
        upstream = nil
        let dialed = connection.dialedAddress.map { FailedAddress(address: $0, kind: UpstreamFailureKind(connectionError: error)) }
        let reason: UpstreamCloseReason
        if let refused = error as? HTTP1CodecError {
            reason = UpstreamCloseReason(refused)
        } else if let error {
            reason = .failed(reason: UpstreamConnector.shortReason(error))
        } else {
            reason = .closed
        }
        run(machine.upstream(.closed(reason, dialed: dialed), now: now))
    }
}

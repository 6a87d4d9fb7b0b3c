import Logging
import NIOCore
import NIOHTTP1
import ProxyHTTP
import ProxyKit
import ProxyUpstream

// Upstream connections: dialing (or taking a pooled one), the upstream pipeline, and the
// upstream side's events turned into machine events.
extension ClientConnectionHandler {
    func connect(_ route: UpstreamRoute, avoiding: Set<String>, context: ChannelHandlerContext) {
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
                guard self.context != nil, self.machine.wantsUpstream(forExchange: exchange) else {
                    connected.channel.close(promise: nil)
                    return
                }
                guard let connection = try? connected.channel.pipeline.syncOperations.handler(type: UpstreamHTTPConnection.self) else {
                    // The channel closed and its handlers are gone already (the origin closed it
                    // at once): as a close before use.
                    connected.channel.close(promise: nil)
                    self.closedBeforeUse(connected.address, error: nil)
                    return
                }
                connection.dialedAddress = connected.address
                connection.lease = ConnectionLease(source: connected.source, dialedAt: self.now, lifetime: connected.answerLifetime)
                self.attach(
                    connection,
                    info: UpstreamConnectInfo(
                        pooled: false,
                        dialedIP: connection.dialedIP,
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

    func attach(_ connection: UpstreamHTTPConnection, info: UpstreamConnectInfo) {
        guard connection.attach(to: self) else {
            // The origin closed the fresh connection between the connect and now, and its close
            // found nobody to tell: nothing was sent, so the request is tried again (once)
            // instead of waiting for the upstream timeout.
            closedBeforeUse(connection.dialedAddress, error: connection.closeError)
            return
        }
        connection.setReadAllowed(machine.clientWritable)
        upstream = connection
        run(machine.upstreamConnected(info, now: now))
    }

    private func closedBeforeUse(_ address: SocketAddress?, error: (any Error)?) {
        let dialed = address.map { FailedAddress(address: $0, kind: UpstreamFailureKind(connectionError: error)) }
        logger.debug("upstream closed as soon as it was made", metadata: ["upstream.ip": "\(address?.ipAddress ?? "?")"])
        run(machine.upstreamClosedBeforeUse(dialed: dialed, now: now))
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

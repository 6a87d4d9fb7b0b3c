import NIOCore
import NIOHTTP1

/// CONNECT tunnels and upgrades: dialing the target, then handing both channels to `TunnelSwitch`.
extension ClientConnectionHandler {
    /// A request or tunnel is over (records of a transparent connection say so).
    func finished(_ record: AccessLogRecord) {
        guard let transparent else { return env.finished(record) }
        var record = record
        transparent.tag(&record)
        env.finished(record)
    }

    func connectTunnel(_ target: RequestTarget, context: ChannelHandlerContext) {
        env.connector.connect(
            host: target.host,
            port: target.port,
            tls: nil,
            avoiding: [],
            on: context.eventLoop,
            channelInitializer: { channel in channel.eventLoop.makeSucceededVoidFuture() }
        ).assumeIsolated().whenComplete { result in
            switch result {
            case .success(let connected):
                guard self.context != nil, self.machine.wantsTunnel else {
                    connected.channel.close(promise: nil)
                    return
                }
                self.tunnelChannel = connected.channel
                self.run(
                    self.machine.tunnelConnected(
                        UpstreamConnectInfo(
                            pooled: false,
                            dialedIP: connected.address.ipAddress,
                            source: connected.source.rawValue,
                            resolveMs: connected.resolveTime.milliseconds,
                            connectMs: connected.connectTime.milliseconds
                        )
                    )
                )
            case .failure(let error):
                guard self.context != nil, self.machine.wantsTunnel else { return }
                let proxyError = error as? ProxyError ?? ProxyError(.connectFailed, "cannot connect to \(target.host): \(error)")
                self.run(self.machine.tunnelConnectFailed(proxyError, now: self.now))
            }
        }
    }

    /// Both channels carry raw bytes from now on. For an upgrade, the 101 goes out first and the
    /// upstream keeps what arrives after it for the tunnel; for CONNECT the 200 goes out after the
    /// codec is gone.
    func switchToTunnel(upgradeHead: HTTPResponseHead?, record: AccessLogRecord, started: NIODeadline, context: ChannelHandlerContext) {
        let upstreamChannel: any Channel
        var upgraded: UpstreamHTTPConnection?
        if let upgradeHead {
            guard let connection = upstream, let channel = connection.channel else {
                context.close(promise: nil)
                return
            }
            upstream = nil
            connection.delegate = nil
            connection.startCollecting(expectingEnd: true)
            writeResponse(.head(upgradeHead), context: context)
            context.flush()
            upgraded = connection
            upstreamChannel = channel
        } else {
            guard let channel = tunnelChannel else {
                context.close(promise: nil)
                return
            }
            tunnelChannel = nil
            upstreamChannel = channel
        }
        timer?.cancel()
        timer = nil
        // Bytes held back by the read-ahead gate go to the decoder, which stopped parsing at the
        // CONNECT or upgrade head and hands them on as tunnel bytes when it is removed.
        observer.releaseNow()
        TunnelSwitch.removeHTTPHandlers(client: context.pipeline.syncOperations, codec: codec, upstream: upgraded, on: context.eventLoop)
            .assumeIsolated().whenComplete { result in
                guard case .success = result, let context = self.context, upstreamChannel.isActive else {
                    upstreamChannel.close(promise: nil)
                    self.context?.close(promise: nil)
                    return
                }
                if upgradeHead == nil {
                    var established = context.channel.allocator.buffer(capacity: 64)
                    established.writeString("HTTP/1.1 200 Connection established\r\n\r\n")
                    context.writeAndFlush(NIOAny(established), promise: nil)
                }
                let upstreamBytes = upgraded?.takeCollected() ?? []
                if let upgraded { upstreamChannel.pipeline.syncOperations.removeHandler(upgraded, promise: nil) }
                let env = self.env
                let transparent = self.transparent
                let recorder = TunnelRecorder(record: record, started: started) { record in
                    env.metrics?.tunnels.decrement()
                    env.traffic.tunnelClosed()
                    var record = record
                    transparent?.tag(&record)
                    env.finished(record)
                }
                do {
                    try TunnelSwitch.install(
                        clientHandlerContext: context,
                        upstream: upstreamChannel,
                        clientBytes: self.machine.tunnelInstalled(),
                        upstreamBytes: upstreamBytes,
                        recorder: recorder,
                        idleTimeout: self.env.configuration.tunnelIdleTimeout
                    )
                    // Balanced by the recorder's end, which runs only for an installed tunnel.
                    env.metrics?.tunnels.increment()
                    env.traffic.tunnelOpened()
                } catch {
                    upstreamChannel.close(promise: nil)
                    context.close(promise: nil)
                    return
                }
                self.observer.disarm()
                context.pipeline.syncOperations.removeHandler(self.observer, promise: nil)
                let client = context.channel
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                // Reads were held while switching; let both sides start.
                upstreamChannel.read()
                client.read()
            }
    }

}

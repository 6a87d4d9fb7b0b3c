import NIOCore
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

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
                guard self.context != nil else {
                    connected.channel.close(promise: nil)
                    return
                }
                // The switch begins with this connection (`.beginTunnelSwitch`) unless the client
                // left meanwhile.
                self.offered = connected
                let info = UpstreamConnectInfo(
                    pooled: false,
                    dialedIP: connected.address.ipAddress,
                    source: connected.source.rawValue,
                    resolveMs: connected.resolveTime.milliseconds,
                    connectMs: connected.connectTime.milliseconds
                )
                self.run(self.machine.tunnel(.connected(info), now: self.now))
                if let unwanted = self.offered.take() { unwanted.channel.close(promise: nil) }
            case .failure(let error):
                guard self.context != nil else { return }
                let proxyError = error as? ProxyError ?? ProxyError(.connectFailed, "cannot connect to \(target.host): \(error)")
                self.run(self.machine.tunnel(.connectFailed(proxyError), now: self.now))
            }
        }
    }

    /// Starts the switch: both channels will carry raw bytes. For an upgrade the 101 goes out first
    /// and the upstream keeps what arrives after it for the tunnel; for CONNECT the dialed
    /// connection becomes the tunnel's upstream, and the 200 goes out once the decoder is gone
    /// (`installTunnel`). The machine hears back when the decoders are gone.
    func beginTunnelSwitch(upgradeHead: ResponseHead?, context: ChannelHandlerContext) {
        // The decoder is going: what arrives from now on is tunnel bytes.
        readsRawBytes = true
        if let upgradeHead {
            guard let connection = upstream, let channel = connection.channel else {
                run(machine.tunnel(.handlersRemoved(succeeded: false), now: now))
                return
            }
            upstream = nil
            connection.startCollecting(expectingEnd: true)
            // Held before the 101 goes out: a flush that fails closes the client at once, and the
            // close must find this connection to close it too (and so leaves no `switching`).
            switching = .upgraded(connection, channel)
            writeResponse(.head(upgradeHead), context: context)
            context.flush()
            guard self.context != nil, switching != nil else { return }
        } else {
            guard let dialed = offered.take() else {
                run(machine.tunnel(.handlersRemoved(succeeded: false), now: now))
                return
            }
            switching = .dialed(dialed.channel)
        }
        timer?.cancel()
        timer = nil
        // Bytes after the CONNECT or upgrade head (and any the read-ahead gate held) stay unparsed
        // in the decoder, which hands them on as tunnel bytes when it is removed.
        TunnelSwitch.removeHTTPHandlers(client: context.pipeline.syncOperations, codec: codec, upstream: switching?.upgraded, on: context.eventLoop)
            .assumeIsolated().whenComplete { result in
                guard self.context != nil else {
                    // A handler removed meanwhile: the safety net for a client that went away.
                    self.closeTunnelUpstream()
                    return
                }
                let succeeded: Bool
                if case .success = result, self.switching?.channel.isActive == true { succeeded = true } else { succeeded = false }
                self.run(self.machine.tunnel(.handlersRemoved(succeeded: succeeded), now: self.now))
            }
    }

    /// The decoders are gone: glue the channels and replay what arrived during the switch.
    func installTunnel(
        record: AccessLogRecord, started: NIODeadline, clientBytes: HeldBytes, sayEstablished: Bool, idleTimeout: TimeAmount,
        context: ChannelHandlerContext
    ) {
        guard let side = switching else {
            run(machine.tunnel(.installFailed, now: now))
            return
        }
        let upstreamChannel = side.channel
        let upgraded = side.upgraded
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
                clientBytes: clientBytes.parts,
                upstreamBytes: upstreamBytes,
                recorder: recorder,
                idleTimeout: idleTimeout
            )
        } catch {
            run(machine.tunnel(.installFailed, now: now))
            return
        }
        // Balanced by the recorder's end, which runs only for an installed tunnel.
        env.metrics?.tunnels.increment()
        env.traffic.tunnelOpened()
        run(machine.tunnel(.installed, now: now))
        switching = nil
        if sayEstablished {
            // After the install: a write that fails now closes a tunnel its recorder owns. Reads
            // are still held, so nothing from the origin can come before it.
            var established = context.channel.allocator.buffer(capacity: 64)
            established.writeString("HTTP/1.1 200 Connection established\r\n\r\n")
            context.writeAndFlush(NIOAny(established), promise: nil)
        }
        requestDecoder.disarm()
        let client = context.channel
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        // Reads were held while switching; let both sides start.
        upstreamChannel.read()
        client.read()
    }

    /// Closes the upstream side of a tunnel being set up (a dialed CONNECT target, or the
    /// connection that accepted an upgrade).
    func closeTunnelUpstream() {
        // The channel, not the connection handler: once the glue replaced it, the handler has no
        // context to close with.
        switching?.channel.close(promise: nil)
        switching = nil
    }
}

/// The upstream side of a tunnel, between its connect (or the origin's 101) and the glue.
enum TunnelUpstream {
    /// A CONNECT target's plain TCP channel.
    case dialed(any Channel)
    /// The upstream HTTP connection that accepted an upgrade (its decoder is removed too), and
    /// its channel.
    case upgraded(UpstreamHTTPConnection, any Channel)

    var upgraded: UpstreamHTTPConnection? {
        if case .upgraded(let connection, _) = self { return connection }
        return nil
    }

    var channel: any Channel {
        switch self {
        case .dialed(let channel): channel
        case .upgraded(_, let channel): channel
        }
    }
}

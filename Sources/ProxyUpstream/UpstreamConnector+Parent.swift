import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import OpenSSLTLS
import ProxyConfig
import ProxyKit

/// Connections through the parent proxy (`parent-proxy`): one TCP connection to the parent per
/// attempt (TLS to the parent on it for an `https://` parent), `CONNECT target` on it
/// (`ParentTunnelHandler`), then TLS to the origin and the caller's handlers over the tunnel. The
/// targets are tried in order (the addresses HTTPDNS gave, health first, or the name with
/// `parent-resolve parent`); a 502, 503 or 504 from the parent moves on to the next.
extension UpstreamConnector {
    /// What the parent is asked to connect to.
    enum ParentTarget: Sendable {
        case address(SocketAddress)
        case name(String)

        func text(port: Int) -> String {
            switch self {
            case .address(let address): address.endpointText
            case .name(let name): name.contains(":") ? "[\(name)]:\(port)" : "\(name):\(port)"
            }
        }
    }

    /// An IP literal the parent is to be asked for by name (`parent-resolve parent`) still passes
    /// the destination policy and the own-listener check: the parent must not be sent to them.
    func literalDenial(host: String, port: Int) -> ProxyError? {
        guard let literal = try? SocketAddress(ipAddress: host, port: port) else { return nil }
        if case .failure(let denial) = allowedAddresses(Resolution(addresses: [literal], source: .literal)) {
            return ProxyError(.destinationDenied, "destination denied by policy: \(denial.reasons)")
        }
        return nil
    }

    /// The TCP connection to the parent failed (not an answer of the parent's).
    struct ParentUnreachable: Error {
        var error: any Error
    }

    func dialViaParent(
        _ plan: ConnectPlan, parent: ParentSettings, targets: [ParentTarget], refusals: [String], avoiding: Set<String>
    ) -> EventLoopFuture<ConnectedUpstream> {
        let eventLoop = plan.eventLoop
        let endpoint = parent.proxy.endpoint
        guard let target = targets.first else {
            return eventLoop.makeFailedFuture(
                ProxyError(.connectFailed, "the parent proxy \(endpoint) could not reach \(plan.host): \(refusals.joined(separator: "; "))"))
        }
        let targetText = target.text(port: plan.port)
        let tlsContext = self.tlsContext
        let connectTimeout = self.connectTimeout
        let own = self.ownConnections
        return originBootstrap(on: eventLoop)
            .channelInitializer { channel in
                // Each attempt (a parent name with several addresses) gets its own handler and promise.
                let promise = channel.eventLoop.makePromise(of: Void.self)
                do {
                    let sync = channel.pipeline.syncOperations
                    // The proxy's own connection, for the transparent listener's loop check.
                    try sync.addHandler(ConnectAttemptObserver(health: nil, attempts: nil, own: own))
                    // An https:// parent: TLS to it first; the CONNECT and everything after go inside.
                    if let parentTLS = parent.tlsHandler() { try sync.addHandler(parentTLS) }
                    try sync.addHandler(
                        ParentTunnelHandler(target: targetText, credentials: parent.proxy.credentials, answerTimeout: connectTimeout, result: promise))
                    if let tls = plan.tls, let tlsContext {
                        try sync.addHandler(OpenSSLHandler(context: tlsContext, serverName: tls.serverName, port: plan.port, spkiPins: tls.spkiPins))
                        try sync.addHandler(TLSHandshakeGate(serverName: tls.serverName))
                    }
                } catch {
                    promise.fail(error)
                    return channel.eventLoop.makeFailedFuture(error)
                }
                return plan.channelInitializer(channel)
            }
            // The parent's own address: named by the operator, exempt from the destination policy.
            .connect(host: parent.proxy.host, port: parent.proxy.port)
            .flatMapErrorThrowing { error in throw ParentUnreachable(error: error) }
            .flatMap { channel -> EventLoopFuture<ConnectedUpstream> in
                let connected = NIODeadline.now()
                // The winning attempt's own handler (it leaves the pipeline only after the parent's
                // answer, which cannot have arrived before this callback on the same loop).
                guard let established = try? channel.pipeline.syncOperations.handler(type: ParentTunnelHandler.self).result.futureResult else {
                    channel.close(promise: nil)
                    return eventLoop.makeFailedFuture(ProxyError(.connectFailed, "the connection to the parent proxy \(endpoint) was not set up"))
                }
                let address: SocketAddress? = if case .address(let address) = target { address } else { nil }
                return established.flatMap { () -> EventLoopFuture<UpstreamTLSHandshake?> in
                    guard plan.tls != nil else { return eventLoop.makeSucceededFuture(nil) }
                    do {
                        return try channel.pipeline.syncOperations.handler(type: TLSHandshakeGate.self).handshakeResult(on: eventLoop).map { $0 }
                    } catch {
                        return eventLoop.makeFailedFuture(error)
                    }
                }.map { handshake in
                    ConnectedUpstream(
                        channel: channel, address: address ?? channel.remoteAddress ?? (try! SocketAddress(ipAddress: "0.0.0.0", port: 0)),
                        source: plan.source, resolveTime: plan.resolveTime, connectTime: connected - plan.resolvedAt, tls: handshake,
                        answerLifetime: plan.lifetime)
                }.flatMapError { error in
                    channel.close(promise: nil)
                    return self.afterParentFailure(error, plan: plan, parent: parent, targets: targets, refusals: refusals, avoiding: avoiding)
                }
            }
            .flatMapError { error in
                self.afterParentUnreachable(error, parent: parent, on: eventLoop) {
                    self.connect(
                        host: plan.host, port: plan.port, tls: plan.tls, avoiding: avoiding, on: eventLoop, direct: true,
                        channelInitializer: plan.channelInitializer)
                }
            }
    }

    /// The TCP connection to the parent failed (`ParentUnreachable`; any other error passes):
    /// `parent-down fail` answers it, `parent-down direct` dials `direct()` instead, whose
    /// connection is marked so that it is not pooled.
    func afterParentUnreachable(
        _ error: any Error, parent: ParentSettings, on eventLoop: any EventLoop, direct: () -> EventLoopFuture<ConnectedUpstream>
    ) -> EventLoopFuture<ConnectedUpstream> {
        guard let unreachable = error as? ParentUnreachable else { return eventLoop.makeFailedFuture(error) }
        guard parent.down == .direct else {
            return eventLoop.makeFailedFuture(
                ProxyError(.connectFailed, "the parent proxy \(parent.proxy.endpoint) is unreachable: \(unreachable.error) (parent-down fail)"))
        }
        return direct().map { upstream in
            var upstream = upstream
            upstream.bypassedParent = true
            return upstream
        }
    }

    /// TLS to an `https://` parent failed (its certificate, most often): not a reason to go direct.
    static func parentTLSFailure(_ error: any Error, parent: ParentProxy) -> ProxyError {
        ProxyError(
            .connectFailed,
            "TLS to the parent proxy \(parent.scheme)://\(parent.endpoint) failed: \(error) (its certificate must name \(parent.host) "
                + "and chain to the system store or --parent-ca-file)")
    }

    /// The parent refused the tunnel or TLS over it failed: the next target for a 502, 503 or 504,
    /// else an error that says what the parent answered and what to change.
    private func afterParentFailure(
        _ error: any Error, plan: ConnectPlan, parent: ParentSettings, targets: [ParentTarget], refusals: [String], avoiding: Set<String>
    ) -> EventLoopFuture<ConnectedUpstream> {
        let eventLoop = plan.eventLoop
        let endpoint = parent.proxy.endpoint
        let targetText = targets.first?.text(port: plan.port) ?? "?"
        guard let refusal = error as? ParentTunnelHandler.ParentRefusal else {
            if let failed = error as? ParentTunnelHandler.ParentTLSFailed {
                return eventLoop.makeFailedFuture(Self.parentTLSFailure(failed.error, parent: parent.proxy))
            }
            if let closed = error as? ParentTunnelHandler.ParentClosed {
                return eventLoop.makeFailedFuture(ProxyError(.connectFailed, "the parent proxy \(endpoint), asked for \(targetText): \(closed)"))
            }
            // TLS over the tunnel: as for a direct connection to that address.
            let ip: String = if case .address(let address) = targets.first { address.ipAddress ?? targetText } else { targetText }
            let failure = AddressFailure(ip: ip, error: error)
            return eventLoop.makeFailedFuture(Self.describeHandshakeFailures([failure], host: plan.host, port: plan.port, tried: 1))
        }
        switch refusal.status {
        case 502, 503, 504:
            return dialViaParent(
                plan, parent: parent, targets: Array(targets.dropFirst()), refusals: refusals + ["CONNECT \(targetText): \(refusal.statusLine)"],
                avoiding: avoiding)
        case 407:
            let what = parent.proxy.credentials == nil
                ? "asks for credentials: put them in --parent-proxy http://user:password@\(endpoint)"
                : "refused the credentials in --parent-proxy"
            return eventLoop.makeFailedFuture(ProxyError(.connectFailed, "the parent proxy \(endpoint) \(what) ('\(refusal.statusLine)')"))
        default:
            var message = "the parent proxy \(endpoint) answered CONNECT \(targetText) with '\(refusal.statusLine)'"
            if case .address = targets.first, (400...499).contains(refusal.status) {
                message += "; the parent may refuse CONNECT to IP addresses or to this port: --parent-resolve parent asks it to resolve "
                    + "\(plan.host) itself (and sends plain HTTP to it as ordinary proxy requests)"
            }
            return eventLoop.makeFailedFuture(ProxyError(.connectFailed, message))
        }
    }
}

extension UpstreamConnector {
    /// A plain HTTP request's connection. With `parent-resolve parent` and a route to the parent:
    /// to the parent itself, the request then going in absolute form naming the host (an ordinary
    /// proxy request, the parent's DNS). Otherwise as `connect`: with `parent-resolve local`
    /// through a tunnel to the HTTPDNS address, since a parent handed an absolute-form request
    /// naming an address must replace `Host` with it (RFC 9112 §3.2.2), which breaks every
    /// name-based virtual host.
    package func connectForwarding(
        host: String,
        port: Int,
        avoiding: Set<String>,
        on eventLoop: any EventLoop,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<ConnectedUpstream> {
        guard case .parent(let parent) = route(host: host), parent.resolve == .parent else {
            return connect(host: host, port: port, tls: nil, avoiding: avoiding, on: eventLoop, channelInitializer: channelInitializer)
        }
        if let denial = literalDenial(host: host, port: port) { return eventLoop.makeFailedFuture(denial) }
        let started = NIODeadline.now()
        let forward = ParentForward(
            authority: ParentTarget.name(host).text(port: port),
            authorization: parent.proxy.credentials.map { "Basic " + ParentTunnelHandler.base64(Array($0.utf8)) })
        let own = self.ownConnections
        return originBootstrap(on: eventLoop)
            .channelInitializer { channel in
                do {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ConnectAttemptObserver(health: nil, attempts: nil, own: own))
                    // An https:// parent: the requests go to it over TLS, once its certificate is verified.
                    if let parentTLS = parent.tlsHandler() {
                        try sync.addHandler(parentTLS)
                        try sync.addHandler(TLSHandshakeGate(serverName: parent.proxy.host))
                    }
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
                return channelInitializer(channel)
            }
            .connect(host: parent.proxy.host, port: parent.proxy.port)
            .flatMapErrorThrowing { error in throw ParentUnreachable(error: error) }
            .flatMap { channel -> EventLoopFuture<ConnectedUpstream> in
                let upstream = ConnectedUpstream(
                    channel: channel, address: channel.remoteAddress ?? (try! SocketAddress(ipAddress: "0.0.0.0", port: 0)), source: .parent,
                    resolveTime: .zero, connectTime: NIODeadline.now() - started, tls: nil, parentForward: forward)
                guard parent.tls != nil else { return eventLoop.makeSucceededFuture(upstream) }
                do {
                    return try channel.pipeline.syncOperations.handler(type: TLSHandshakeGate.self).handshakeResult(on: eventLoop)
                        .map { _ in upstream }
                        .flatMapError { error in
                            channel.close(promise: nil)
                            return eventLoop.makeFailedFuture(Self.parentTLSFailure(error, parent: parent.proxy))
                        }
                } catch {
                    channel.close(promise: nil)
                    return eventLoop.makeFailedFuture(error)
                }
            }
            .flatMapError { error in
                self.afterParentUnreachable(error, parent: parent, on: eventLoop) {
                    self.connect(host: host, port: port, tls: nil, avoiding: avoiding, on: eventLoop, direct: true, channelInitializer: channelInitializer)
                }
            }
    }
}

import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import OpenSSLTLS
import ProxyConfig
import ProxyKit

/// A connection to an upstream, with what it took to get it. For TLS the handshake has completed
/// and the origin is verified.
package struct ConnectedUpstream: Sendable {
    package let channel: any Channel
    package let address: SocketAddress
    package let source: ResolutionSource
    package let resolveTime: TimeAmount
    /// From the end of resolution until the chosen connection was established (TCP), including
    /// addresses whose TLS handshake failed before it.
    package let connectTime: TimeAmount
    /// The TLS handshake of this connection; nil for plain TCP.
    package let tls: UpstreamTLSHandshake?
    /// How much longer the answer the address came from stays current (`Resolution.lifetime`).
    package var answerLifetime: TimeAmount? = nil
    /// Set when the channel goes to the parent proxy itself, for an absolute-form request.
    package var parentForward: ParentForward? = nil
    /// Dialed directly because the parent proxy was unreachable (`parent-down direct`): not to be
    /// kept for reuse, so traffic returns to the parent once it is back.
    package var bypassedParent = false
}

/// Name → addresses (resolver) → destination policy on each address → order by learned health
/// (`IPHealthRegistry`: healthy first, fastest first, families interleaved, endpoints in back-off
/// last) → Happy Eyeballs connect (250 ms stagger, overall `connectTimeout`) over that order →
/// (TLS) handshake with the original name. Every address that gets dialed has passed the policy,
/// whatever its source. A failed TLS handshake counts as that address failing: the connect starts
/// again over the addresses not tried yet, so at most one round per address. When every address of
/// an HTTPDNS answer failed, the resolver's fallback (system DNS) supplies the addresses not tried
/// yet, which go through the policy too.
package final class UpstreamConnector: Sendable {
    /// What a configuration reload may change: read at each use, swapped whole.
    package struct Reloadable: Sendable {
        var policy: DestinationPolicy
        var connectTimeout: TimeAmount
        /// Shared by every TLS connection (trust, ALPN, session cache); nil: TLS origination is off.
        var tlsContext: TLSClientContext?
        /// `route`: checked against the host asked for before anything is resolved or dialed.
        var routes: [RouteRule]
        /// `parent-proxy` and how it is used; nil: every connection is direct.
        var parent: ParentSettings?

        package init(
            policy: DestinationPolicy, connectTimeout: TimeAmount, tlsContext: TLSClientContext?, routes: [RouteRule] = [],
            parent: ParentSettings? = nil
        ) {
            self.policy = policy
            self.connectTimeout = connectTimeout
            self.tlsContext = tlsContext
            self.routes = routes
            self.parent = parent
        }
    }

    /// The parent proxy with `parent-resolve` and `parent-down`.
    package struct ParentSettings: Sendable {
        var proxy: ParentProxy
        var resolve: ParentResolve
        var down: ParentDown
        /// An `https://` parent: the trust its certificate is verified with (nil: `http://`).
        var tls: TLSClientContext?

        package init(proxy: ParentProxy, resolve: ParentResolve, down: ParentDown, tls: TLSClientContext? = nil) {
            self.proxy = proxy
            self.resolve = resolve
            self.down = down
            self.tls = tls
        }

        /// TLS to the parent itself, first in the pipeline: its certificate must name the host in
        /// the URL. Nil for an `http://` parent.
        func tlsHandler() -> OpenSSLHandler? {
            tls.map { OpenSSLHandler(context: $0, serverName: proxy.host, port: proxy.port) }
        }
    }

    package let resolver: any UpstreamResolver
    private let reloadable: NIOLockedValueBox<Reloadable>
    package var policy: DestinationPolicy { reloadable.withLockedValue { $0.policy } }
    package var connectTimeout: TimeAmount { reloadable.withLockedValue { $0.connectTimeout } }
    var tlsContext: TLSClientContext? { reloadable.withLockedValue { $0.tlsContext } }
    /// Per-endpoint health shared by every connection; nil: addresses are dialed in resolver order.
    package let health: IPHealthRegistry?
    /// This process's own listeners: never dialed.
    let ownListeners: OwnListeners
    /// Counts connect attempts by family and result; nil: none.
    let metrics: ProxyMetrics?
    /// SO_MARK of every origin socket (`--outbound-mark`); nil: none.
    let outboundMark: UInt32?
    /// The local ends of the connections made here, for the transparent listener's loop check;
    /// nil without a transparent listener (nothing to check, so no lock per connect).
    package let ownConnections: OwnConnections?

    package init(
        resolver: any UpstreamResolver,
        policy: DestinationPolicy,
        connectTimeout: TimeAmount,
        tlsContext: TLSClientContext? = nil,
        health: IPHealthRegistry? = nil,
        ownListeners: OwnListeners = OwnListeners(),
        metrics: ProxyMetrics? = nil,
        outboundMark: UInt32? = nil,
        ownConnections: OwnConnections? = OwnConnections(),
        routes: [RouteRule] = [],
        parent: ParentSettings? = nil
    ) {
        self.ownConnections = ownConnections
        self.outboundMark = outboundMark
        self.ownListeners = ownListeners
        self.metrics = metrics
        self.resolver = resolver
        self.reloadable = NIOLockedValueBox(Reloadable(policy: policy, connectTimeout: connectTimeout, tlsContext: tlsContext, routes: routes, parent: parent))
        self.health = health
    }

    /// Where a connection to `host` goes.
    enum Route {
        case deny(ProxyError)
        case direct
        case parent(ParentSettings)
    }

    /// The first `route` rule matching `host` decides; none: the parent when one is set, else direct.
    func route(host: String) -> Route {
        let (routes, parent) = reloadable.withLockedValue { ($0.routes, $0.parent) }
        guard let (rule, position) = routes.firstMatch(host: host) else { return parent.map { .parent($0) } ?? .direct }
        switch rule.action {
        case .deny: return .deny(.routeDenied(host, rule: rule, position: position))
        case .direct: return .direct
        // The loader refuses a parent rule without a parent.
        case .parent: return parent.map { .parent($0) } ?? .direct
        }
    }


    /// A reload: connects from now on use these; connections made stay as they are.
    package func update(_ settings: Reloadable) {
        reloadable.withLockedValue { $0 = settings }
    }

    /// Connects to `host`:`port`. With `tls`, `OpenSSLHandler` goes first in the pipeline
    /// (before what `channelInitializer` adds) and the future completes only after the handshake.
    /// `avoiding`: IPs dialed last whatever their health (a retry after a failure on one of them).
    package func connect(
        host: String,
        port: Int,
        tls: UpstreamTLS? = nil,
        avoiding: Set<String> = [],
        on eventLoop: any EventLoop,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<ConnectedUpstream> {
        connect(host: host, port: port, tls: tls, avoiding: avoiding, on: eventLoop, direct: false, channelInitializer: channelInitializer)
    }

    /// `direct`: dial directly whatever the route says (the parent was unreachable, `parent-down direct`).
    func connect(
        host: String,
        port: Int,
        tls: UpstreamTLS?,
        avoiding: Set<String>,
        on eventLoop: any EventLoop,
        direct: Bool,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<ConnectedUpstream> {
        let started = NIODeadline.now()
        let parent: ParentSettings?
        switch route(host: host) {
        case .deny(let denial): return eventLoop.makeFailedFuture(denial)
        case .direct: parent = nil
        case .parent(let settings): parent = direct ? nil : settings
        }
        if tls != nil && tlsContext == nil {
            return eventLoop.makeFailedFuture(ProxyError(.tlsHandshakeFailed, "TLS origination to \(host) is not configured in this proxy"))
        }
        if let parent, parent.resolve == .parent {
            // The parent resolves: nothing for HTTPDNS or the policy to see, but an IP literal.
            if let denial = literalDenial(host: host, port: port) { return eventLoop.makeFailedFuture(denial) }
            let plan = ConnectPlan(
                host: host, port: port, tls: tls, allowed: [], source: .parent, lifetime: nil, resolveTime: .zero, resolvedAt: started,
                eventLoop: eventLoop, channelInitializer: channelInitializer)
            return dialViaParent(plan, parent: parent, targets: [.name(host)], refusals: [], avoiding: avoiding)
        }
        if tls != nil && tlsContext == nil {
            return eventLoop.makeFailedFuture(ProxyError(.tlsHandshakeFailed, "TLS origination to \(host) is not configured in this proxy"))
        }
        let resolution: EventLoopFuture<Resolution>
        if let literal = try? SocketAddress(ipAddress: host, port: port) {
            resolution = eventLoop.makeSucceededFuture(Resolution(addresses: [literal], source: .literal))
        } else {
            resolution = resolver.resolve(host: host, port: port, on: eventLoop).flatMapErrorThrowing { error in
                // The resolver's own errors already say "cannot resolve HOST".
                if let error = error as? ProxyError { throw error }
                throw ProxyError(.resolveFailed, "cannot resolve \(host): \(error)")
            }
        }
        return resolution.flatMap { resolution in
            let resolved = NIODeadline.now()
            let allowed: [SocketAddress]
            switch self.allowedAddresses(resolution) {
            case .success(let addresses): allowed = addresses
            case .failure(let denial):
                let what = resolution.source == .literal ? "" : " (all \(resolution.addresses.count) addresses of \(host) denied)"
                return eventLoop.makeFailedFuture(ProxyError(.destinationDenied, "destination denied by policy: \(denial.reasons)\(what)"))
            }
            let plan = ConnectPlan(
                host: host,
                port: port,
                tls: tls,
                allowed: allowed,
                source: resolution.source,
                lifetime: resolution.lifetime,
                resolveTime: resolved - started,
                resolvedAt: resolved,
                eventLoop: eventLoop,
                channelInitializer: channelInitializer
            )
            let ordered = self.order(allowed, avoiding: avoiding)
            if let parent {
                return self.dialViaParent(plan, parent: parent, targets: ordered.map { .address($0) }, refusals: [], avoiding: avoiding)
            }
            return self.dial(plan, remaining: ordered, earlierFailures: []).flatMapError { error in
                self.fallBack(after: error, resolution: resolution, plan: plan)
            }
        }
    }

    /// Every outbound connection's bootstrap (to an origin or the parent): `--outbound-mark` and
    /// `--connect-timeout`.
    func originBootstrap(on eventLoop: any EventLoop) -> ClientBootstrap {
        var bootstrap = ClientBootstrap(group: eventLoop).connectTimeout(connectTimeout)
        if let outboundMark {
            bootstrap = bootstrap.channelOption(Self.markOption, value: SocketOptionValue(Int32(bitPattern: outboundMark)))
        }
        return bootstrap
    }

    /// SO_MARK (linux/socket.h): set before connect, so netfilter sees the mark on the SYN.
    static let markOption = ChannelOptions.Types.SocketOption(level: .socket, name: NIOBSDSocket.Option(rawValue: 36))

    struct Denial: Error {
        var reasons: String
    }

    /// The addresses the policy allows, or every denial reason when it allows none.
    func allowedAddresses(_ resolution: Resolution) -> Result<[SocketAddress], Denial> {
        var allowed: [SocketAddress] = []
        var denials: [String] = []
        for address in resolution.addresses {
            if ownListeners.contains(address) {
                denials.append("\(address.endpointText) is this proxy's own listener")
            } else if let reason = policy.denialReason(for: address) {
                denials.append(reason)
            } else {
                allowed.append(address)
            }
        }
        return allowed.isEmpty ? .failure(Denial(reasons: denials.joined(separator: "; "))) : .success(allowed)
    }

    /// Health order (when health is tracked), with `avoiding` moved to the end.
    func order(_ addresses: [SocketAddress], avoiding: Set<String>) -> [SocketAddress] {
        let ordered = health?.ordered(addresses) ?? addresses
        guard !avoiding.isEmpty else { return ordered }
        return ordered.filter { !avoiding.contains($0.ipAddress ?? "") } + ordered.filter { avoiding.contains($0.ipAddress ?? "") }
    }

    /// Every address of an HTTPDNS answer failed: system DNS (if the resolver falls back), minus the
    /// addresses already tried, through the policy, then one more connect over what is left.
    private func fallBack(after error: any Error, resolution: Resolution, plan: ConnectPlan) -> EventLoopFuture<ConnectedUpstream> {
        let eventLoop = plan.eventLoop
        guard resolution.source != .literal, let proxyError = error as? ProxyError, Self.fallsBack(proxyError.kind),
              let fallback = resolver.fallback(after: resolution, host: plan.host, port: plan.port, reason: proxyError.message, on: eventLoop)
        else {
            return eventLoop.makeFailedFuture(error)
        }
        let tried = Set(resolution.addresses.compactMap(\.ipAddress))
        return fallback.flatMapError { fallbackError in
            eventLoop.makeFailedFuture(ProxyError(proxyError.kind, "\(proxyError.message); system DNS fallback: \(fallbackError)"))
        }.flatMap { fallbackResolution in
            var fresh = Resolution(addresses: [], source: fallbackResolution.source)
            var seen = tried
            for address in fallbackResolution.addresses where seen.insert(address.ipAddress ?? "\(address)").inserted {
                fresh.addresses.append(address)
            }
            guard !fresh.addresses.isEmpty else {
                return eventLoop.makeFailedFuture(ProxyError(proxyError.kind, "\(proxyError.message); system DNS fallback gave no other address"))
            }
            let allowed: [SocketAddress]
            switch self.allowedAddresses(fresh) {
            case .success(let addresses): allowed = addresses
            case .failure(let denial):
                return eventLoop.makeFailedFuture(
                    ProxyError(proxyError.kind, "\(proxyError.message); system DNS fallback: destination denied by policy: \(denial.reasons)")
                )
            }
            var fallbackPlan = plan
            fallbackPlan.allowed = allowed
            fallbackPlan.source = fresh.source
            fallbackPlan.lifetime = fallbackResolution.lifetime
            return self.dial(fallbackPlan, remaining: self.order(allowed, avoiding: []), earlierFailures: []).flatMapErrorThrowing { secondError in
                let second = secondError as? ProxyError ?? ProxyError(.connectFailed, "\(secondError)")
                throw ProxyError(second.kind, "\(proxyError.message); system DNS fallback: \(second.message)")
            }
        }
    }

    /// Failures after which other addresses could help (not policy denials or configuration errors).
    static func fallsBack(_ kind: ProxyError.Kind) -> Bool {
        switch kind {
        case .connectFailed, .connectTimeout, .tlsCertificateInvalid, .tlsHandshakeFailed: true
        default: false
        }
    }

    /// What one `connect` call needs across its rounds.
    struct ConnectPlan: Sendable {
        let host: String
        let port: Int
        let tls: UpstreamTLS?
        var allowed: [SocketAddress]
        var source: ResolutionSource
        var lifetime: TimeAmount?
        let resolveTime: TimeAmount
        let resolvedAt: NIODeadline
        let eventLoop: any EventLoop
        let channelInitializer: @Sendable (any Channel) -> EventLoopFuture<Void>
    }

    /// One round: Happy Eyeballs over `remaining` in that order, then (TLS) the handshake on the
    /// winner. A failed handshake removes that address and starts another round over the rest.
    func dial(_ plan: ConnectPlan, remaining: [SocketAddress], earlierFailures: [AddressFailure]) -> EventLoopFuture<ConnectedUpstream> {
        let eventLoop = plan.eventLoop
        let tlsContext = self.tlsContext
        let connectTimeout = self.connectTimeout
        let health = self.health
        let metrics = self.metrics
        let own = self.ownConnections
        let attempts = ConnectAttempts()
        return originBootstrap(on: eventLoop)
            .resolver(FixedAddressResolver(addresses: remaining, eventLoop: eventLoop))
            .channelInitializer { channel in
                do {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(
                        ConnectAttemptObserver(health: health, attempts: attempts, metrics: metrics, successIsFinal: plan.tls == nil, own: own))
                    if let tls = plan.tls, let tlsContext {
                        try sync.addHandler(
                            OpenSSLHandler(context: tlsContext, serverName: tls.serverName, port: plan.port, spkiPins: tls.spkiPins)
                        )
                        try sync.addHandler(TLSHandshakeGate(serverName: tls.serverName))
                    }
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
                return plan.channelInitializer(channel)
            }
            .connect(host: plan.host, port: plan.port)
            .flatMapErrorThrowing { error in
                if case ChannelError.connectTimeout = error {
                    // NIO closes the attempts still pending; for them the overall timeout is the outcome.
                    for address in attempts.takePending() {
                        health?.recordFailure(address, kind: .timeout)
                        metrics?.connectAttempt(ipv6: address.protocol == .inet6, result: "timeout", duration: nil)
                    }
                }
                throw Self.describeConnectFailure(
                    error,
                    host: plan.host,
                    port: plan.port,
                    tried: plan.allowed,
                    timeout: connectTimeout,
                    earlierFailures: earlierFailures
                )
            }
            .flatMap { channel in
                let connected = NIODeadline.now()
                guard plan.tls != nil else {
                    return eventLoop.makeSucceededFuture(
                        ConnectedUpstream(
                            channel: channel,
                            address: channel.remoteAddress ?? remaining[0],
                            source: plan.source,
                            resolveTime: plan.resolveTime,
                            connectTime: connected - plan.resolvedAt,
                            tls: nil,
                            answerLifetime: plan.lifetime
                        )
                    )
                }
                let gate: TLSHandshakeGate
                do {
                    gate = try channel.pipeline.syncOperations.handler(type: TLSHandshakeGate.self)
                } catch {
                    channel.close(promise: nil)
                    return eventLoop.makeFailedFuture(error)
                }
                let address = gate.remoteAddress ?? channel.remoteAddress
                return gate.handshakeResult(on: eventLoop).map { handshake in
                    if let address { metrics?.connectAttempt(ipv6: address.protocol == .inet6, result: "ok", duration: nil) }
                    return ConnectedUpstream(
                        channel: channel,
                        address: address ?? remaining[0],
                        source: plan.source,
                        resolveTime: plan.resolveTime,
                        connectTime: connected - plan.resolvedAt,
                        tls: handshake,
                        answerLifetime: plan.lifetime
                    )
                }.flatMapError { error in
                    channel.close(promise: nil)
                    if let address {
                        health?.recordFailure(address, kind: .tls)
                        metrics?.connectAttempt(ipv6: address.protocol == .inet6, result: "tls", duration: nil)
                    }
                    let failures = earlierFailures + [AddressFailure(ip: address?.ipAddress ?? "?", error: error)]
                    let rest = remaining.filter { $0.ipAddress != address?.ipAddress }
                    guard address != nil, !rest.isEmpty, rest.count < remaining.count else {
                        return eventLoop.makeFailedFuture(
                            Self.describeHandshakeFailures(failures, host: plan.host, port: plan.port, tried: plan.allowed.count)
                        )
                    }
                    return self.dial(plan, remaining: rest, earlierFailures: failures)
                }
            }
    }
}

/// Hands NIO's Happy Eyeballs connector a list we already resolved, filtered and ordered. The
/// whole list is the "AAAA" answer and the "A" answer is empty: NIO's connector then dials in
/// exactly our order (it interleaves its two lists itself, and a socket's family follows each
/// address, not the query), and it starts at once instead of waiting the 50 ms resolution delay
/// it grants a late AAAA answer.
struct FixedAddressResolver: Resolver, Sendable {
    let addresses: [SocketAddress]
    let eventLoop: any EventLoop

    func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        eventLoop.makeSucceededFuture([])
    }

    func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        eventLoop.makeSucceededFuture(addresses)
    }

    func cancelQueries() {}
}

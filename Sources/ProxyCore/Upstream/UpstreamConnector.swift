import NIOCore
import NIOPosix
import OpenSSLTLS
import ProxyConfig

/// A connection to an upstream, with what it took to get it. For TLS the handshake has completed
/// and the origin is verified.
public struct ConnectedUpstream: Sendable {
    public let channel: any Channel
    public let address: SocketAddress
    public let source: ResolutionSource
    public let resolveTime: TimeAmount
    /// From the end of resolution until the chosen connection was established (TCP), including
    /// addresses whose TLS handshake failed before it.
    public let connectTime: TimeAmount
    /// The TLS handshake of this connection; nil for plain TCP.
    public let tls: UpstreamTLSHandshake?
}

/// Name → addresses (resolver) → destination policy on each address → Happy Eyeballs connect over
/// the allowed ones → (TLS) handshake with the original name. Every address that gets dialed has
/// passed the policy, whatever its source. A failed TLS handshake counts as that address failing:
/// the connect starts again over the addresses not tried yet, so at most one round per address.
public final class UpstreamConnector: Sendable {
    let resolver: any UpstreamResolver
    let policy: DestinationPolicy
    let connectTimeout: TimeAmount
    /// Shared by every TLS connection (trust, ALPN, session cache); nil: TLS origination is off.
    let tlsContext: TLSClientContext?

    public init(
        resolver: any UpstreamResolver,
        policy: DestinationPolicy,
        connectTimeout: TimeAmount,
        tlsContext: TLSClientContext? = nil
    ) {
        self.resolver = resolver
        self.policy = policy
        self.connectTimeout = connectTimeout
        self.tlsContext = tlsContext
    }

    /// Connects to `host`:`port`. With `tls`, `OpenSSLClientHandler` goes first in the pipeline
    /// (before what `channelInitializer` adds) and the future completes only after the handshake.
    public func connect(
        host: String,
        port: Int,
        tls: UpstreamTLS? = nil,
        on eventLoop: any EventLoop,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<ConnectedUpstream> {
        let started = NIODeadline.now()
        if tls != nil && tlsContext == nil {
            return eventLoop.makeFailedFuture(ProxyError(.tlsHandshakeFailed, "TLS origination to \(host) is not configured in this proxy"))
        }
        let resolution: EventLoopFuture<Resolution>
        if let literal = try? SocketAddress(ipAddress: host, port: port) {
            resolution = eventLoop.makeSucceededFuture(Resolution(addresses: [literal], source: .literal))
        } else {
            resolution = resolver.resolve(host: host, port: port, on: eventLoop).flatMapErrorThrowing { error in
                throw ProxyError(.resolveFailed, "cannot resolve \(host): \(error)")
            }
        }
        let policy = self.policy
        return resolution.flatMap { resolution in
            let resolved = NIODeadline.now()
            var allowedAddresses: [SocketAddress] = []
            var denials: [String] = []
            for address in resolution.addresses {
                if let reason = policy.denialReason(for: address) {
                    denials.append(reason)
                } else {
                    allowedAddresses.append(address)
                }
            }
            let allowed = allowedAddresses
            guard !allowed.isEmpty else {
                let what = resolution.source == .literal ? "" : " (all \(resolution.addresses.count) addresses of \(host) denied)"
                return eventLoop.makeFailedFuture(
                    ProxyError(.destinationDenied, "destination denied by policy: \(denials.joined(separator: "; "))\(what)")
                )
            }
            let plan = ConnectPlan(
                host: host,
                port: port,
                tls: tls,
                allowed: allowed,
                source: resolution.source,
                resolveTime: resolved - started,
                resolvedAt: resolved,
                eventLoop: eventLoop,
                channelInitializer: channelInitializer
            )
            return self.dial(plan, remaining: allowed, earlierFailures: [])
        }
    }

    /// What one `connect` call needs across its rounds.
    private struct ConnectPlan: Sendable {
        let host: String
        let port: Int
        let tls: UpstreamTLS?
        let allowed: [SocketAddress]
        let source: ResolutionSource
        let resolveTime: TimeAmount
        let resolvedAt: NIODeadline
        let eventLoop: any EventLoop
        let channelInitializer: @Sendable (any Channel) -> EventLoopFuture<Void>
    }

    /// One round: Happy Eyeballs over `remaining`, then (TLS) the handshake on the winner. A failed
    /// handshake removes that address and starts another round over the rest.
    private func dial(_ plan: ConnectPlan, remaining: [SocketAddress], earlierFailures: [AddressFailure]) -> EventLoopFuture<ConnectedUpstream> {
        let eventLoop = plan.eventLoop
        let tlsContext = self.tlsContext
        let connectTimeout = self.connectTimeout
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .resolver(FixedAddressResolver(addresses: remaining, eventLoop: eventLoop))
            .channelInitializer { channel in
                if let tls = plan.tls, let tlsContext {
                    do {
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(
                            OpenSSLClientHandler(context: tlsContext, serverName: tls.serverName, port: plan.port, spkiPins: tls.spkiPins)
                        )
                        try sync.addHandler(TLSHandshakeGate(serverName: tls.serverName))
                    } catch {
                        return channel.eventLoop.makeFailedFuture(error)
                    }
                }
                return plan.channelInitializer(channel)
            }
            .connect(host: plan.host, port: plan.port)
            .flatMapErrorThrowing { error in
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
                            tls: nil
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
                    ConnectedUpstream(
                        channel: channel,
                        address: address ?? remaining[0],
                        source: plan.source,
                        resolveTime: plan.resolveTime,
                        connectTime: connected - plan.resolvedAt,
                        tls: handshake
                    )
                }.flatMapError { error in
                    channel.close(promise: nil)
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

/// Hands NIO's Happy Eyeballs connector a list we already resolved and filtered.
struct FixedAddressResolver: Resolver, Sendable {
    let addresses: [SocketAddress]
    let eventLoop: any EventLoop

    func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        eventLoop.makeSucceededFuture(addresses.filter { $0.protocol == .inet })
    }

    func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        eventLoop.makeSucceededFuture(addresses.filter { $0.protocol == .inet6 })
    }

    func cancelQueries() {}
}

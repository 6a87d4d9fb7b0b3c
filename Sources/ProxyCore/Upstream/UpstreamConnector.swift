#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore
import NIOPosix
import ProxyConfig

/// A TCP connection to an upstream, with what it took to get it.
public struct ConnectedUpstream {
    public let channel: any Channel
    public let address: SocketAddress
    public let source: ResolutionSource
    public let resolveTime: TimeAmount
    public let connectTime: TimeAmount
}

/// Name → addresses (resolver) → destination policy on each address → Happy Eyeballs connect over
/// the allowed ones. Every address that gets dialed has passed the policy, whatever its source.
public final class UpstreamConnector: Sendable {
    let resolver: any UpstreamResolver
    let policy: DestinationPolicy
    let connectTimeout: TimeAmount

    public init(resolver: any UpstreamResolver, policy: DestinationPolicy, connectTimeout: TimeAmount) {
        self.resolver = resolver
        self.policy = policy
        self.connectTimeout = connectTimeout
    }

    public func connect(
        host: String,
        port: Int,
        on eventLoop: any EventLoop,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<ConnectedUpstream> {
        let started = NIODeadline.now()
        let resolution: EventLoopFuture<Resolution>
        if let literal = try? SocketAddress(ipAddress: host, port: port) {
            resolution = eventLoop.makeSucceededFuture(Resolution(addresses: [literal], source: .literal))
        } else {
            resolution = resolver.resolve(host: host, port: port, on: eventLoop).flatMapErrorThrowing { error in
                throw ProxyError(.resolveFailed, "cannot resolve \(host): \(error)")
            }
        }
        let policy = self.policy
        let connectTimeout = self.connectTimeout
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
            return ClientBootstrap(group: eventLoop)
                .connectTimeout(connectTimeout)
                .resolver(FixedAddressResolver(addresses: allowed, eventLoop: eventLoop))
                .channelInitializer(channelInitializer)
                .connect(host: host, port: port)
                .flatMapErrorThrowing { error in
                    throw Self.describeConnectFailure(error, host: host, port: port, tried: allowed, timeout: connectTimeout)
                }
                .map { channel in
                    let connected = NIODeadline.now()
                    return ConnectedUpstream(
                        channel: channel,
                        address: channel.remoteAddress ?? allowed[0],
                        source: resolution.source,
                        resolveTime: resolved - started,
                        connectTime: connected - resolved
                    )
                }
        }
    }

    static func describeConnectFailure(
        _ error: any Error,
        host: String,
        port: Int,
        tried: [SocketAddress],
        timeout: TimeAmount
    ) -> ProxyError {
        let triedText = tried.map { $0.ipAddress ?? "\($0)" }.joined(separator: ", ")
        if let error = error as? NIOConnectionError {
            let details = error.connectionErrors.map { failure in
                "\(failure.target.ipAddress ?? "?"): \(Self.shortReason(failure.error))"
            }
            return ProxyError(
                .connectFailed,
                "cannot connect to \(host) port \(port): \(details.isEmpty ? "no address answered" : details.joined(separator: "; ")) (tried \(tried.count) address\(tried.count == 1 ? "" : "es"))"
            )
        }
        if case ChannelError.connectTimeout = error {
            return ProxyError(
                .connectTimeout,
                "connecting to \(host) port \(port) timed out after \(timeout.milliseconds) ms (tried: \(triedText))"
            )
        }
        return ProxyError(.connectFailed, "cannot connect to \(host) port \(port): \(Self.shortReason(error)) (tried: \(triedText))")
    }

    static func shortReason(_ error: any Error) -> String {
        if let io = error as? IOError {
            switch io.errnoCode {
            case ECONNREFUSED: return "connection refused"
            case ENETUNREACH: return "network unreachable"
            case EHOSTUNREACH: return "host unreachable"
            case ETIMEDOUT: return "timed out"
            default: return "\(io)"
            }
        }
        if case ChannelError.connectTimeout = error { return "timed out" }
        return "\(error)"
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

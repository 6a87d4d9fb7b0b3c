import ProxyKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOConcurrencyHelpers
import NIOCore
import OpenSSLTLS

/// The attempts of one Happy Eyeballs round: which addresses were dialed and are still pending, so
/// that when the round's overall timeout fires, those count as timed out (their channels are closed
/// by NIO, which on its own would look like a cancellation, not a failure).
final class ConnectAttempts: Sendable {
    private let pending = NIOLockedValueBox<[SocketAddress]>([])

    func started(_ address: SocketAddress) {
        pending.withLockedValue { $0.append(address) }
    }

    func finished(_ address: SocketAddress) {
        pending.withLockedValue { list in
            if let index = list.firstIndex(of: address) { list.remove(at: index) }
        }
    }

    /// The addresses dialed and not finished; clears the list.
    func takePending() -> [SocketAddress] {
        pending.withLockedValue { list in
            defer { list = [] }
            return list
        }
    }
}

/// First handler of every upstream channel while it connects: sees the address NIO's Happy Eyeballs
/// dials and how the TCP connect ends, and teaches the health table (connect time on success, a
/// failure on refused/reset/unreachable/timeout). A connect abandoned because another address won
/// is neither. Removes itself once the connect is over.
final class ConnectAttemptObserver: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny

    private let health: IPHealthRegistry?
    private let attempts: ConnectAttempts?
    private let metrics: ProxyMetrics?
    /// A successful TCP connect ends the attempt (no TLS handshake follows): count it as `ok`.
    private let successIsFinal: Bool
    /// Where a connected socket's local end is recorded (transparent loop detection); nil: nowhere.
    private let own: OwnConnections?

    init(
        health: IPHealthRegistry?, attempts: ConnectAttempts?, metrics: ProxyMetrics? = nil, successIsFinal: Bool = true,
        own: OwnConnections? = nil
    ) {
        self.own = own
        self.health = health
        self.attempts = attempts
        self.metrics = metrics
        self.successIsFinal = successIsFinal
    }

    func connect(context: ChannelHandlerContext, to address: SocketAddress, promise: EventLoopPromise<Void>?) {
        let health = self.health
        let attempts = self.attempts
        let metrics = self.metrics
        let successIsFinal = self.successIsFinal
        let own = self.own
        let started = health?.now() ?? .now()
        let ipv6 = address.protocol == .inet6
        attempts?.started(address)
        let observed = context.eventLoop.makePromise(of: Void.self)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        observed.futureResult.hop(to: context.eventLoop).assumeIsolated().whenComplete { result in
            attempts?.finished(address)
            let context = loopBound.value
            switch result {
            case .success:
                own?.add(context.channel)
                let connectTime = (health?.now() ?? .now()) - started
                if let health, let endpoint = UpstreamEndpoint(address) {
                    health.recordSuccess(endpoint, connectTime: connectTime)
                }
                metrics?.connectAttempt(ipv6: ipv6, result: successIsFinal ? "ok" : nil, duration: connectTime)
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            case .failure(let error):
                if let kind = UpstreamFailureKind(connectError: error) {
                    health?.recordFailure(address, kind: kind)
                    metrics?.connectAttempt(ipv6: ipv6, result: kind == .refused ? "refused" : kind == .timeout ? "timeout" : "other", duration: nil)
                }
            }
        }
        observed.futureResult.cascade(to: promise)
        context.connect(to: address, promise: observed)
    }
}

@available(*, unavailable)
extension ConnectAttemptObserver: Sendable {}

extension UpstreamFailureKind {
    /// How a failed TCP connect counts for the endpoint; nil when it says nothing about the endpoint
    /// (the attempt was cancelled because another address won, or the proxy is closing).
    package init?(connectError error: any Error) {
        if let io = error as? IOError {
            self.init(errno: io.errnoCode)
            return
        }
        if case ChannelError.connectTimeout = error {
            self = .timeout
            return
        }
        return nil
    }

    /// A failure of an established connection or handshake.
    package init(connectionError error: (any Error)?) {
        switch error {
        case let io as IOError: self.init(errno: io.errnoCode)
        case is TLSError: self = .tls
        case nil: self = .closed
        default: self = .other
        }
    }

    init(errno: Int32) {
        switch errno {
        case ECONNREFUSED: self = .refused
        case ECONNRESET, EPIPE, ECONNABORTED: self = .reset
        case ETIMEDOUT: self = .timeout
        case ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL: self = .unreachable
        default: self = .other
        }
    }
}

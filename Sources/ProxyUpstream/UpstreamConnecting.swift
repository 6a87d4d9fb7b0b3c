import NIOCore

/// What a client connection needs to reach an origin: `UpstreamConnector` in the proxy, a fake
/// that hands out `EmbeddedChannel`s in the handler's tests.
package protocol UpstreamConnecting: LeaseRenewing {
    /// Connects to `host`:`port` (TLS when `tls`); `avoiding`: addresses to try last.
    /// `channelInitializer` sets up each attempt's pipeline.
    func connect(
        host: String,
        port: Int,
        tls: UpstreamTLS?,
        avoiding: Set<String>,
        on eventLoop: any EventLoop,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<ConnectedUpstream>

    /// Like `connect` without TLS, for a plain HTTP request: through the parent proxy when a
    /// route sends `host` there, the connection goes to the parent itself (no tunnel) and says in
    /// `parentForward` what the absolute-form request line must name.
    func connectForwarding(
        host: String,
        port: Int,
        avoiding: Set<String>,
        on eventLoop: any EventLoop,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<ConnectedUpstream>

    /// Learns that `address` failed (back-off for later dials).
    func recordFailure(_ failed: FailedAddress)
}

extension UpstreamConnecting {
    /// Without a parent proxy: a direct connection.
    package func connectForwarding(
        host: String,
        port: Int,
        avoiding: Set<String>,
        on eventLoop: any EventLoop,
        channelInitializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<ConnectedUpstream> {
        connect(host: host, port: port, tls: nil, avoiding: avoiding, on: eventLoop, channelInitializer: channelInitializer)
    }
}

/// A plain HTTP request sent to the parent proxy itself: the authority its request line names
/// (the address HTTPDNS chose, or the name with `parent-resolve parent`) and the parent's
/// credentials.
package struct ParentForward: Sendable, Equatable {
    package var authority: String
    package var authorization: String?

    package init(authority: String, authorization: String?) {
        self.authority = authority
        self.authorization = authorization
    }
}

extension UpstreamConnector: UpstreamConnecting {
    package func renewLease(host: String, ip: String, source: ResolutionSource, now: NIODeadline) -> ConnectionLease.Verdict {
        resolver.renewLease(host: host, ip: ip, source: source, now: now)
    }

    package func recordFailure(_ failed: FailedAddress) {
        health?.recordFailure(failed.address, kind: failed.kind)
    }
}

/// An upstream address that failed and how: carried in by the close event, out by the retry or
/// failure action, into the health table's back-off.
package struct FailedAddress: Equatable, Sendable {
    package var address: SocketAddress
    package var kind: UpstreamFailureKind

    package init(address: SocketAddress, kind: UpstreamFailureKind) {
        self.address = address
        self.kind = kind
    }
}

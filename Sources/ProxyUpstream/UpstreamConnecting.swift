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

    /// Learns that `address` failed (back-off for later dials).
    func recordFailure(_ failed: FailedAddress)
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

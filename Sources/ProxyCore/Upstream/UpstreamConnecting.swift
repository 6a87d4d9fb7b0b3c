import NIOCore

/// What a client connection needs to reach an origin: `UpstreamConnector` in the proxy, a fake
/// that hands out `EmbeddedChannel`s in the handler's tests.
protocol UpstreamConnecting: LeaseRenewing {
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
    func renewLease(host: String, ip: String, source: ResolutionSource, now: NIODeadline) -> ConnectionLease.Verdict {
        resolver.renewLease(host: host, ip: ip, source: source, now: now)
    }

    func recordFailure(_ failed: FailedAddress) {
        health?.recordFailure(failed.address, kind: failed.kind)
    }
}

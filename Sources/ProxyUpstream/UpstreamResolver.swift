import NIOCore

/// Where an answer came from; goes to the access log and statistics.
package enum ResolutionSource: String, Sendable {
    /// The request named an IP address.
    case literal
    /// getaddrinfo, as the configured provider.
    case system
    /// An HTTPDNS query made for this request.
    case httpdns
    /// A fresh cached HTTPDNS answer.
    case cache
    /// An expired HTTPDNS answer served while it is refreshed.
    case stale
    /// getaddrinfo after HTTPDNS had no answer.
    case fallback = "system_fallback"
    /// The hosts file (`--hosts-file`), asked before any resolver.
    case local
    /// The parent proxy was asked for the name (`parent-resolve parent`).
    case parent
}

package struct Resolution: Sendable {
    package var addresses: [SocketAddress]
    package var source: ResolutionSource
    /// How much longer the answer stays current (a cached answer's remaining TTL, zero when served
    /// stale); nil when the source gives none (system DNS, a literal). Starts a pooled
    /// connection's lease (`ConnectionLease`).
    package var lifetime: TimeAmount?

    package init(addresses: [SocketAddress], source: ResolutionSource, lifetime: TimeAmount? = nil) {
        self.addresses = addresses
        self.source = source
        self.lifetime = lifetime
    }
}

/// Resolves upstream host names. Implementations answer on the given event loop; a cached answer
/// should complete synchronously (an already-succeeded future) so the hot path does no thread hop.
package protocol UpstreamResolver: Sendable {
    func resolve(host: String, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution>

    /// Called when no address of `failed` (an answer of this resolver) could be connected to: other
    /// addresses to try (system DNS after HTTPDNS), or nil when there is no such fallback. `reason`
    /// says why the connects failed, for the log.
    func fallback(after failed: Resolution, host: String, port: Int, reason: String, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution>?

    /// A pooled connection to `ip` for `host`, whose lease ended at `now`: may it be reused, and until
    /// when (`ConnectionLease`)? Answers synchronously, from what the resolver already knows.
    func renewLease(host: String, ip: String, source: ResolutionSource, now: NIODeadline) -> ConnectionLease.Verdict
}

extension UpstreamResolver {
    package func fallback(after failed: Resolution, host: String, port: Int, reason: String, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution>? {
        nil
    }
}

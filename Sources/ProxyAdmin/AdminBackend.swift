import NIOCore
import NetworkWatch
import ProxyChecks
import ProxyConfig
import ProxyKit
import ProxyUpstream

/// Everything the admin listener reads from, or asks of, the running proxy: one protocol instead of
/// a closure per endpoint. ProxyApp implements it over the server, the resolver stack and the
/// checks; a test implements only what it looks at. Each member's default means "not offered here"
/// (the endpoint answers 404 or leaves its part out).
package protocol AdminBackend: Sendable {
    /// `/healthz` answers 503 "draining" once shutdown began.
    var isDraining: Bool { get }
    /// Clients allowed to use the admin listener besides loopback (the proxy's `--allow-client`, as
    /// reloaded); nil: any.
    var allowedClients: [CIDR]? { get }
    /// `/stats`, `/cache`, `/resolve` and purging read the resolver stack; nil: none configured.
    var resolvers: ResolverStack? { get }
    /// `/health/ips`.
    var ipHealth: IPHealthRegistry? { get }
    /// `/proxy.pac` names the proxy as these settings say.
    var pac: PACSettings? { get }
    /// `POST /reload` is offered.
    var reloads: Bool { get }

    /// `/stats` → `access`.
    func accessStats() -> AccessStats?
    /// `/metrics`: the Prometheus text exposition; nil: metrics are off.
    func metricsText() -> String?
    /// `/audit`: nil when `--compare-system-dns` is off.
    func auditReport() -> SystemDNSAuditReport?
    /// `/stats` → `network`.
    func networkStats() -> NetworkChangeStats?
    /// `/errors`: the last failed requests and tunnels.
    func recentErrors() -> RecentErrorsReport?
    /// `/stats` → `reload`.
    func reloadStatus() -> ReloadStatus?
    /// `/summary`: what the admin page's overview shows.
    func summary() -> AdminSummary?
    /// `POST /reload` (only when `reloads`): read the configuration again and apply it. Async: it
    /// reads files, off the event loops.
    func reload() async -> (ok: Bool, message: String)
    /// Closes the pooled upstream connections to `host` (every host when nil) and succeeds on
    /// `eventLoop` with how many idle ones it closed; nil: no pool here.
    func retirePooledConnections(host: String?, on eventLoop: any EventLoop) -> EventLoopFuture<Int>?
    /// `/cache` → `forwarded`: the DNS listener's cached forwarded answers; nil: no DNS listener.
    func forwardedAnswers() -> [ForwardedAnswerListing]?
    /// Forgets the DNS listener's forwarded answers for `host` (all when nil); how many, or nil
    /// without a DNS listener.
    func purgeForwardedAnswers(_ host: String?) -> Int?
}

/// A forwarded answer as `/cache` lists it.
package struct ForwardedAnswerListing: Sendable, Encodable, Equatable {
    package var name: String
    /// The question's type code (1 A, 16 TXT, 33 SRV, ...).
    package var type: Int
    package var rcode: Int
    /// Seconds left; negative: past its TTL by that much (kept for serve-stale).
    package var ttl: Int

    package init(name: String, type: Int, rcode: Int, ttl: Int) {
        self.name = name
        self.type = type
        self.rcode = rcode
        self.ttl = ttl
    }
}

extension AdminBackend {
    package var allowedClients: [CIDR]? { nil }
    package var resolvers: ResolverStack? { nil }
    package var ipHealth: IPHealthRegistry? { nil }
    package var pac: PACSettings? { nil }
    package var reloads: Bool { false }
    package func accessStats() -> AccessStats? { nil }
    package func metricsText() -> String? { nil }
    package func auditReport() -> SystemDNSAuditReport? { nil }
    package func networkStats() -> NetworkChangeStats? { nil }
    package func recentErrors() -> RecentErrorsReport? { nil }
    package func reloadStatus() -> ReloadStatus? { nil }
    package func summary() -> AdminSummary? { nil }
    package func reload() async -> (ok: Bool, message: String) { (false, "reload is not available here") }
    package func retirePooledConnections(host: String?, on eventLoop: any EventLoop) -> EventLoopFuture<Int>? { nil }
    package func forwardedAnswers() -> [ForwardedAnswerListing]? { nil }
    package func purgeForwardedAnswers(_ host: String?) -> Int? { nil }
}

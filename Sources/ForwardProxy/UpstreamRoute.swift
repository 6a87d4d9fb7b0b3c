import ProxyConfig
import ProxyHTTP
import ProxyUpstream

/// How a forwarded request reaches its origin: the port to dial and whether to originate TLS.
///
/// - `https://host[:port]/...` → TLS to `port` (443 by default).
/// - `http://host[:port]/...` matching a `tls-upgrade` rule → TLS to the rule's port (443 unless the
///   rule names one); the request keeps its `Host` header and is logged as the client sent it.
/// - any other `http://` request → plain TCP to `port`.
///
/// TLS always verifies the certificate against the request's original host (never the dialed IP)
/// and sends that host as SNI; the host's SPKI pins from the configuration apply when it has some.
struct UpstreamRoute: Hashable, Sendable {
    /// The request's host (name or IP literal, lowercased, no brackets): what gets resolved.
    var host: String
    /// The port dialed.
    var port: Int
    /// Present when the connection to the origin is TLS.
    var tls: UpstreamTLS?
    /// The parent proxy it goes through (`host:port`), nil: direct.
    var parent: String? = nil

    /// The route for `target` under `configuration`.
    static func forRequest(_ target: RequestTarget, configuration: ProxyConfiguration) -> UpstreamRoute {
        var route = direct(target, configuration: configuration)
        // Keyed by the parent (scheme included) and its credentials: a reload changing them never reuses the old.
        route.parent = configuration.parentProxy(forHost: target.host).map { "\($0.scheme)://\($0.endpoint)#\($0.credentials?.hashValue ?? 0)" }
        return route
    }

    private static func direct(_ target: RequestTarget, configuration: ProxyConfiguration) -> UpstreamRoute {
        switch target.scheme {
        case .https:
            return UpstreamRoute(
                host: target.host,
                port: target.port,
                tls: UpstreamTLS(serverName: target.host, spkiPins: configuration.spkiPins(forHost: target.host) ?? [], upgraded: false)
            )
        case .http:
            guard let tlsPort = configuration.tlsUpgradeTarget(host: target.host, port: target.port) else {
                return UpstreamRoute(host: target.host, port: target.port, tls: nil)
            }
            return UpstreamRoute(
                host: target.host,
                port: tlsPort,
                tls: UpstreamTLS(serverName: target.host, spkiPins: configuration.spkiPins(forHost: target.host) ?? [], upgraded: true)
            )
        }
    }

    /// Connections on the same key are interchangeable: same host, dialed port, transport and
    /// parent (the TLS identity and pins follow from the host).
    var poolKey: PoolKey { PoolKey(host: host, port: port, tls: tls != nil, parent: parent) }
}

@testable import ProxyConfig

/// Raised by the fake file reader for paths the test did not provide.
struct MissingFile: Error, CustomStringConvertible {
    let description = "No such file or directory"
}

/// Loads with in-memory files so tests never touch the disk.
func load(
    flags: [String: [String]] = [:],
    env: [String: String] = [:],
    files: [String: String] = [:]
) throws(ConfigurationError) -> ProxyConfiguration {
    try ConfigurationLoader.load(flagValues: flags, environment: env) { path in
        guard let text = files[path] else { throw MissingFile() }
        return text
    }
}

/// The error `load` throws, or nil when it succeeds.
func loadError(
    flags: [String: [String]] = [:],
    env: [String: String] = [:],
    files: [String: String] = [:]
) -> ConfigurationError? {
    do {
        _ = try load(flags: flags, env: env, files: files)
        return nil
    } catch {
        return error
    }
}

/// A loaded field as text, so one table can describe every option.
func fieldText(_ config: ProxyConfiguration, _ name: String) -> String? {
    switch name {
    case "config": config.configFile ?? "none"
    case "listen": config.listen.description
    case "admin-listen": config.adminListen?.description ?? "off"
    case "pac-proxy": config.pacProxy?.description ?? "none"
    case "pac-bypass": config.pacBypass.map(\.description).joined(separator: ",")
    case "provider": config.provider.rawValue
    case "resolver-url": config.resolverURL ?? "none"
    case "resolver-ip": config.resolverIPs.map(\.description).joined(separator: ",")
    case "account-id": config.accountID ?? "none"
    case "secret": config.secret ?? "none"
    case "alibaba-api": config.alibabaAPI.rawValue
    case "alibaba-encryption": config.alibabaEncryption.rawValue
    case "aes-key": config.aesKey ?? "none"
    case "scheduler-refresh": "\(config.schedulerRefresh.nanoseconds)"
    case "doh-uid": config.dohSignature?.uid ?? "none"
    case "doh-access-key-id": config.dohSignature?.accessKeyID ?? "none"
    case "doh-access-key-secret": config.dohSignature?.accessKeySecret ?? "none"
    case "doh-timestamp-unit": config.dohTimestampUnit.rawValue
    case "doh-method": config.dohMethod.rawValue
    case "tencent-mode": config.tencent.mode.rawValue
    case "tencent-id": config.tencent.id ?? "none"
    case "tencent-token": config.tencent.token ?? "none"
    case "tencent-key": config.tencent.key ?? "none"
    case "tencent-alg": config.tencent.algorithm.rawValue
    case "tencent-ecs-ip": config.tencent.ecsIP?.description ?? "none"
    case "static-list": config.staticList ?? "none"
    case "static-refresh": "\(config.staticRefresh.nanoseconds)"
    case "resolver-timeout": "\(config.resolverTimeout.nanoseconds)"
    case "resolver-ca-file": config.resolverCAFile ?? "none"
    case "ip-family": config.ipFamily.rawValue
    case "min-ttl": "\(config.minTTL.nanoseconds)"
    case "max-ttl": "\(config.maxTTL.nanoseconds)"
    case "negative-ttl": "\(config.negativeTTL.nanoseconds)"
    case "max-stale": "\(config.maxStale.nanoseconds)"
    case "cache-size": "\(config.cacheSize)"
    case "cache-immutable": "\(config.cacheImmutable)"
    case "system-fallback": "\(config.systemFallback)"
    case "cache-file": config.cacheFile ?? "none"
    case "keepalive-domains": config.keepaliveDomains.joined(separator: ",")
    case "preload": config.preload.joined(separator: ",")
    case "connect-ports": config.connectPorts.map(String.init).joined(separator: ",")
    case "allow-destination": config.allowDestinations.map(\.description).joined(separator: ",")
    case "allow-client": config.allowClients.map(\.description).joined(separator: ",")
    case "proxy-auth":
        config.proxyAuth.map { source -> String in
            switch source {
            case .credential(let user, let password): "\(user):\(password)"
            case .htpasswdFile(let path): "@\(path)"
            }
        }.joined(separator: ",")
    case "proxy-auth-realm": config.proxyAuthRealm
    case "max-connections": "\(config.maxConnections)"
    case "max-connections-per-client": "\(config.maxConnectionsPerClient)"
    case "metrics": "\(config.metrics)"
    case "network-monitor": "\(config.networkMonitor)"
    case "access-log-referer": "\(config.accessLogReferer)"
    case "ca-file": config.caFile ?? "none"
    case "tls-upgrade": config.tlsUpgrade.map(\.description).joined(separator: ",")
    case "spki-pins": config.spkiPins.keys.sorted().map { "\($0)=\(config.spkiPins[$0]!.joined(separator: "+"))" }.joined(separator: ",")
    case "log-level": config.logLevel.rawValue
    case "log-format": config.logFormat.rawValue
    case "access-log": config.accessLog.description
    case "access-log-format": config.accessLogFormat.rawValue
    case "request-id-header": config.requestIDHeader ?? "none"
    case "connect-timeout": "\(config.connectTimeout.nanoseconds)"
    case "ip-backoff": "\(config.ipBackoff.nanoseconds)"
    case "ip-backoff-max": "\(config.ipBackoffMax.nanoseconds)"
    case "upstream-timeout": "\(config.upstreamTimeout.nanoseconds)"
    case "header-timeout": "\(config.headerTimeout.nanoseconds)"
    case "client-idle-timeout": "\(config.clientIdleTimeout.nanoseconds)"
    case "tunnel-idle-timeout": "\(config.tunnelIdleTimeout.nanoseconds)"
    case "pool-max-idle": "\(config.poolMaxIdle)"
    case "pool-idle-timeout": "\(config.poolIdleTimeout.nanoseconds)"
    case "shutdown-grace": "\(config.shutdownGrace.nanoseconds)"
    case "via": config.viaPseudonym
    case "threads": "\(config.threads)"
    case "compare-system-dns": "\(config.compareSystemDNS)"
    case "compare-rate": "\(config.compareRate)"
    case "probe-domains": config.probeDomains.map(\.description).joined(separator: ",")
    case "system-dns-domain": config.systemDNSDomains.suffixes.joined(separator: ",")
    case "transparent-listen": config.transparentListen?.description ?? "off"
    case "transparent-fallback": config.transparentFallback.rawValue
    case "transparent-peek-timeout": "\(config.transparentPeekTimeout.nanoseconds)"
    case "transparent-hello-timeout": "\(config.transparentHelloTimeout.nanoseconds)"
    case "outbound-mark": config.outboundMark.map { "\($0)" } ?? "off"
    case "dns-listen": config.dnsListen?.description ?? "off"
    case "dns-forward-zone": config.dnsForwardZones.suffixes.joined(separator: ",")
    case "dns-upstream": config.dnsUpstreams.map(\.description).joined(separator: ",")
    case "dns-rate-limit": "\(config.dnsRateLimit)"
    case "doh-listen": config.dohListen?.description ?? "off"
    case "doh-token": config.dohToken ?? "none"
    case "fallback-provider": config.fallbackProvider?.rawValue ?? "none"
    case "fallback-resolver-url": config.fallbackResolverURL ?? "none"
    case "fallback-resolver-ip": config.fallbackResolverIPs.map(\.description).joined(separator: ",")
    case "resolver-token": config.resolverToken ?? "none"
    default: nil
    }
}

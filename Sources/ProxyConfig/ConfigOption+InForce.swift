/// The values in force for options whose own value means "work it out" (nil, 0, an empty list),
/// so `config check` and `/summary` show what the proxy uses, not "nil" or "[]".
extension ConfigOption {
    enum InForce {
        static func adminListen(_ config: ProxyConfiguration) -> String? {
            config.adminListen == nil ? "off" : nil
        }

        /// Unset: the listen address; on a wildcard address, the host the PAC file is asked with.
        static func pacProxy(_ config: ProxyConfiguration) -> String? {
            guard config.pacProxy == nil else { return nil }
            let wildcard = IPAddress(config.listen.host).map { $0.bytes.allSatisfy { $0 == 0 } } ?? false
            return wildcard ? "the host /proxy.pac is requested with, port \(config.listen.port)" : config.listen.description
        }

        static func resolverURL(_ config: ProxyConfiguration) -> String? {
            guard config.resolverURL == nil else { return nil }
            return config.effectiveResolverURL ?? "none (provider \(config.provider.rawValue) has no resolver service)"
        }

        static func resolverIPs(_ config: ProxyConfiguration) -> String? {
            guard config.resolverIPs.isEmpty else { return nil }
            let inForce = config.effectiveResolverIPs
            if !inForce.isEmpty { return ConfigOption.displayText(inForce) }
            return config.effectiveResolverURL == nil ? "none" : "none (the resolver host is found through system DNS)"
        }

        static func fallbackResolverURL(_ config: ProxyConfiguration) -> String? {
            guard config.fallbackResolverURL == nil, let fallback = config.fallbackProvider else { return nil }
            return fallback.defaultResolverURL ?? "none"
        }

        /// The fallback's pins as `resolver-ip` shows the first provider's.
        static func fallbackResolverIPs(_ config: ProxyConfiguration) -> String? {
            guard config.fallbackResolverIPs.isEmpty else { return nil }
            guard let fallback = config.fallbackConfiguration else { return "none" }
            return resolverIPs(fallback)
        }

        static func dnsUpstreams(_ config: ProxyConfiguration) -> String? {
            config.dnsUpstreams.isEmpty ? "resolv.conf" : nil
        }

        static func threads(_ config: ProxyConfiguration) -> String? {
            config.threads == 0 ? "\(config.effectiveThreads) (one per CPU core)" : nil
        }
    }
}

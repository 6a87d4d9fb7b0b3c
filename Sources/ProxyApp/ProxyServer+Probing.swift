import ProxyChecks
import ProxyConfig

extension ProxyServer {
    /// Address probing for `--probe-domains` into this proxy's health table, with its destination
    /// policy and connect timeout (as reloaded); nil when no domains are listed.
    package func addressProber(metrics: BackgroundCheckMetrics?) -> AddressProber? {
        guard !configuration.probeDomains.isEmpty else { return nil }
        return AddressProber(
            targets: configuration.probeDomains, connector: connector, health: ipHealth, group: group,
            metrics: metrics, logger: env.logger
        )
    }
}

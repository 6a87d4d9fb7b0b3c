import OpenSSLTLS
import ProxyAccess
import ProxyConfig
import ProxyUpstream

extension ProxyServer {
    /// Applies `new` to new requests and connections, atomically per part: the client ACL and
    /// connection limits, proxy authentication (the htpasswd files are read again), and what a
    /// request is checked and dialed with (connect ports, destinations, TLS-upgrade rules, SPKI
    /// pins, CA files, the parent proxy, timeouts), and the TLS listener's certificates. Open connections and tunnels carry on. Everything is built before
    /// anything is swapped: a CA file or htpasswd file that cannot be used throws and changes nothing.
    package func reload(_ new: ProxyConfiguration) throws(ProxyServerSetupError) {
        let tlsContext: TLSClientContext
        do {
            tlsContext = try Self.makeTLSContext(new)
        } catch {
            throw .tls(error)
        }
        let tlsServerContext: TLSServerContext?
        do {
            tlsServerContext = try Self.makeTLSServerContext(new)
        } catch {
            throw .tlsListener(error)
        }
        let parent: UpstreamConnector.ParentSettings?
        do {
            parent = try Self.parentSettings(new)
        } catch {
            throw .parentTLS(error)
        }
        let authenticator: ProxyAuthenticator?
        do {
            authenticator = try ProxyAuthenticator.make(new, threadPool: authThreads.pool)
        } catch {
            throw .proxyAuth(error.description)
        }
        if authenticator != nil { authThreads.start() }
        connector.update(.init(policy: new.destinationPolicy, connectTimeout: new.connectTimeout, tlsContext: tlsContext, routes: new.routes, parent: parent))
        admission.update(
            allowedBlocks: new.allowClients,
            maxConnections: new.effectiveMaxConnections(openFileLimit: openFileLimit),
            maxConnectionsPerClient: new.maxConnectionsPerClient
        )
        env.update(.init(configuration: new, authenticator: authenticator))
        // The listener stays bound (`tls-listen` needs a restart): without it, nothing to swap.
        if configuration.tlsListen != nil, let tlsServerContext {
            tlsServer.withLockedValue { $0 = tlsServerContext }
            if let expiry = tlsServerContext.earliestExpiry { env.metrics?.tlsListenerCertificatesExpire(at: expiry) }
        }
    }

    /// The clients the ACL admits now (the admin listener follows it too).
    package var allowedClients: [CIDR] { admission.allowedBlocks }

    /// The options the proxy server's reload applies, by name: those of reload class `live` in
    /// the option table. Every other option needs a restart (or is the resolver stack's, see
    /// `ResolverStack.reloadableFields(for:)`), among them the background checks set up at start.
    package static var reloadableFields: Set<String> { ConfigOption.names(reloading: [.live]) }
}

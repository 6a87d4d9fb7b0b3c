import NetworkWatch
import ProxyChecks
import ProxyKit
import ProxyUpstream

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPDNS
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ProxyConfig
import ServiceLifecycle
import Synchronization

/// The admin listener (loopback by default): the live page at `/` and the endpoints of
/// `AdminEndpoint.all` (`/summary`, `/healthz`, `/metrics`, `/stats`, `/errors`, `/cache`, …).
package final class AdminServer: Service, Sendable {
    /// Where the admin listener listens and how long it waits for a request head.
    package struct Settings: Sendable {
        package var host: String
        package var port: Int
        package var headerTimeout: TimeAmount

        package init(host: String, port: Int, headerTimeout: TimeAmount = .seconds(30)) {
            self.host = host
            self.port = port
            self.headerTimeout = headerTimeout
        }
    }

    private let settings: Settings
    private let group: any EventLoopGroup
    private let logger: Logger
    private let routes: AdminRoutes
    /// The proxy's own listeners (the admin listener adds itself), which the proxy never dials.
    private let ownListeners: OwnListeners?
    private let connections: AdminConnectionLimit

    /// Admin connections open at once; more are closed at accept.
    package static let maxConnections = 64

    package init(settings: Settings, group: any EventLoopGroup, backend: any AdminBackend, ownListeners: OwnListeners? = nil, logger: Logger) {
        self.settings = settings
        self.group = group
        self.logger = logger
        self.ownListeners = ownListeners
        self.connections = AdminConnectionLimit(limit: Self.maxConnections)
        self.routes = AdminRoutes(backend: backend)
    }

    /// Why a client may not use the admin listener (outside `allowed`), or nil. Loopback is always
    /// allowed: `httpdns-proxy healthcheck` and local tools probe from it.
    static func refusal(of remote: SocketAddress?, allowed: [CIDR]?) -> String? {
        guard let allowed, let remote, let address = IPAddress(remote) else { return nil }
        let client = address.unmappedIPv4 ?? address
        guard !allowed.contains(where: { $0.contains(client) }), !Self.loopback.contains(where: { $0.contains(client) }) else { return nil }
        return "client \(client) is not allowed to use the admin listener (see --allow-client)"
    }

    private static let loopback = [CIDR("127.0.0.0/8")!, CIDR("::1/128")!]

    /// A `Host` the admin listener answers to: an IP literal or `localhost`, with any port. A DNS
    /// name could be an attacker's, rebound to this address so that a browser page reads the
    /// listener as its own origin (DNS rebinding).
    static func isAcceptableHost(_ host: String?) -> Bool {
        guard let host, !host.isEmpty else { return true }  // HTTP/1.0 without Host: not a browser
        var name = Substring(host)
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            return IPAddress(String(name[name.index(after: name.startIndex)..<close])) != nil
        }
        if let colon = name.lastIndex(of: ":") { name = name[..<colon] }
        while name.hasSuffix(".") { name = name.dropLast() }
        return name.lowercased() == "localhost" || IPAddress(String(name)) != nil
    }

    package func run() async throws {
        let routes = self.routes
        let headerTimeout = settings.headerTimeout
        let connections = self.connections
        let backend = routes.backend
        let logger = self.logger
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .pausingAcceptOnShortage("admin", logger: logger)
            .childChannelInitializer { channel in
                guard connections.open() else {
                    return channel.close()
                }
                channel.closeFuture.whenComplete { _ in connections.closed() }
                let refusal = Self.refusal(of: channel.remoteAddress, allowed: backend.allowedClients)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        AdminHandler(routes: routes, requestTimeout: headerTimeout, refusal: refusal))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: settings.host, port: settings.port).get()
        } catch {
            throw ListenerBindError(listener: "admin", option: "--admin-listen", host: settings.host, port: settings.port, error: error)
        }
        if let address = channel.localAddress {
            ownListeners?.add(address)
            logger.info("admin listening", metadata: ["address": "\(address.endpointText)"])
        }
        try? await gracefulShutdown()
        try? await channel.close()
    }
}

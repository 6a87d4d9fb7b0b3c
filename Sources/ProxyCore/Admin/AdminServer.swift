import Foundation
import HTTPDNS
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ProxyConfig
import ServiceLifecycle
import Synchronization

/// The admin listener (loopback by default): the live page at `/`, `/healthz`, `/stats`, `/cache`,
/// `/resolve?host=`, `/health/ips`, `/audit`, `/errors`, `/proxy.pac`.
public final class AdminServer: Service, Sendable {
    private let host: String
    private let port: Int
    private let group: any EventLoopGroup
    private let logger: Logger
    private let routes: AdminRoutes
    private let headerTimeout: TimeAmount
    private let ownListeners: OwnListeners?
    private let connections: AdminConnectionLimit
    /// Clients allowed to use the admin listener (the proxy's `--allow-client`, as reloaded); nil: any.
    private let allowedClients: (@Sendable () -> [CIDR])?

    /// Admin connections open at once; more are closed at accept.
    public static let maxConnections = 64

    public init(
        host: String,
        port: Int,
        group: any EventLoopGroup,
        logger: Logger,
        resolvers: ResolverStack? = nil,
        ipHealth: IPHealthRegistry? = nil,
        isDraining: @escaping @Sendable () -> Bool,
        headerTimeout: TimeAmount = .seconds(30),
        ownListeners: OwnListeners? = nil,
        access: (@Sendable () -> AccessStats)? = nil,
        metricsText: (@Sendable () -> String)? = nil,
        pac: PACSettings? = nil,
        retirePooled: RetirePooledConnections? = nil,
        allowedClients: (@Sendable () -> [CIDR])? = nil,
        reload: (@Sendable () -> (ok: Bool, message: String))? = nil,
        audit: (@Sendable () -> SystemDNSAuditReport)? = nil,
        network: (@Sendable () -> NetworkChangeStats)? = nil,
        errors: (@Sendable () -> RecentErrorsReport)? = nil,
        reloadStatus: (@Sendable () -> ReloadStatus)? = nil
    ) {
        self.allowedClients = allowedClients
        self.headerTimeout = headerTimeout
        self.ownListeners = ownListeners
        self.connections = AdminConnectionLimit(limit: Self.maxConnections)
        self.host = host
        self.port = port
        self.group = group
        self.logger = logger
        self.routes = AdminRoutes(
            resolvers: resolvers, ipHealth: ipHealth, isDraining: isDraining, access: access, metricsText: metricsText,
            pac: pac, retirePooled: retirePooled, reload: reload, audit: audit, network: network, errors: errors,
            reloadStatus: reloadStatus
        )
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

    public func run() async throws {
        let routes = self.routes
        let headerTimeout = self.headerTimeout
        let connections = self.connections
        let allowedClients = self.allowedClients
        let logger = self.logger
        let acceptErrorLog = LogRateLimiter()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                // Out of descriptors: the listener leaves epoll for 100 ms instead of spinning.
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        AcceptPauseHandler(counters: AcceptPauseHandler.Counters()) { error in
                            acceptErrorLog.run {
                                logger.warning("admin accept failed; pausing for 100 ms", metadata: ["error": "\(error)", "suppressed": "\($0)"])
                            }
                        }
                    )
                }
            }
            .childChannelInitializer { channel in
                guard connections.open() else {
                    return channel.close()
                }
                channel.closeFuture.whenComplete { _ in connections.closed() }
                let refusal = Self.refusal(of: channel.remoteAddress, allowed: allowedClients?())
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        AdminHandler(routes: routes, requestTimeout: headerTimeout, refusal: refusal))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: host, port: port).get()
        } catch {
            throw ListenerBindError(listener: "admin", option: "--admin-listen", host: host, port: port, error: error)
        }
        if let address = channel.localAddress {
            ownListeners?.add(address)
            logger.info("admin listening", metadata: ["address": "\(ClientConnectionHandler.format(address))"])
        }
        try? await gracefulShutdown()
        try? await channel.close()
    }
}

/// What each admin path answers. Responses are JSON except `/healthz` (plain text for probes), the
/// page at `/` and the PAC file.
struct AdminRoutes: Sendable {
    struct Response: Sendable {
        var status: HTTPResponseStatus
        var contentType: String
        var body: String

        static func text(_ status: HTTPResponseStatus, _ body: String) -> Response {
            Response(status: status, contentType: "text/plain; charset=utf-8", body: body + "\n")
        }

        static func json<T: Encodable>(_ value: T) -> Response {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            let body = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
            return Response(status: .ok, contentType: "application/json", body: body + "\n")
        }
    }

    let resolvers: ResolverStack?
    var ipHealth: IPHealthRegistry? = nil
    let isDraining: @Sendable () -> Bool
    var access: (@Sendable () -> AccessStats)? = nil
    /// The Prometheus text exposition (nil: metrics are off).
    var metricsText: (@Sendable () -> String)? = nil
    var pac: PACSettings? = nil
    var retirePooled: RetirePooledConnections? = nil
    /// `POST /reload` (nil: not offered).
    var reload: (@Sendable () -> (ok: Bool, message: String))? = nil
    /// `/audit`: the system-DNS audit's report (nil: `--compare-system-dns` is off).
    var audit: (@Sendable () -> SystemDNSAuditReport)? = nil
    /// The network monitor's counters for `/stats` (nil: not shown).
    var network: (@Sendable () -> NetworkChangeStats)? = nil
    /// `/errors`: the last failed requests and tunnels (nil: 404).
    var errors: (@Sendable () -> RecentErrorsReport)? = nil
    /// The last reload's outcome for `/stats` (nil: not shown).
    var reloadStatus: (@Sendable () -> ReloadStatus)? = nil

    func respond(
        method: HTTPMethod, path: String, query: [String: String], requestHost: String? = nil, on eventLoop: any EventLoop
    ) -> EventLoopFuture<Response> {
        switch (method, path) {
        case (.GET, "/"), (.HEAD, "/"):
            return eventLoop.makeSucceededFuture(Response(status: .ok, contentType: AdminPage.contentType, body: AdminPage.html))
        case (.GET, "/proxy.pac"), (.HEAD, "/proxy.pac"):
            return eventLoop.makeSucceededFuture(pacFile(requestHost: requestHost))
        case (.GET, "/healthz"), (.HEAD, "/healthz"):
            return eventLoop.makeSucceededFuture(isDraining() ? .text(.serviceUnavailable, "draining") : .text(.ok, "ok"))
        case (.POST, "/reload"):
            guard let reload else { return eventLoop.makeSucceededFuture(.text(.notFound, "reload is not available here")) }
            let outcome = reload()
            return eventLoop.makeSucceededFuture(.text(outcome.ok ? .ok : .unprocessableEntity, outcome.message))
        case (.GET, "/metrics"):
            guard let metricsText else {
                return eventLoop.makeSucceededFuture(.text(.notFound, "metrics are off (--metrics false)"))
            }
            return eventLoop.makeSucceededFuture(
                Response(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metricsText()))
        case (.GET, "/stats"):
            guard let resolvers else {
                return eventLoop.makeSucceededFuture(
                    .json(StatsBody(totals: nil, domains: [], access: access?(), network: network?(), reload: reloadStatus?())))
            }
            let domains = resolvers.stats.snapshot().sorted { $0.name < $1.name }
            return eventLoop.makeSucceededFuture(
                .json(StatsBody(totals: resolvers.stats.totals(), domains: domains, access: access?(), network: network?(),
                    alibabaScheduler: resolvers.schedulerSnapshot, reload: reloadStatus?())))
        case (.GET, "/errors"):
            guard let errors else { return eventLoop.makeSucceededFuture(.text(.notFound, "no error record here")) }
            return eventLoop.makeSucceededFuture(.json(errors()))
        case (.GET, "/audit"):
            guard let audit else {
                return eventLoop.makeSucceededFuture(.text(.notFound, "the system DNS audit is off (--compare-system-dns)"))
            }
            return eventLoop.makeSucceededFuture(.json(audit()))
        case (.GET, "/health/ips"):
            let configuration = ipHealth?.configuration ?? IPHealthConfiguration()
            return eventLoop.makeSucceededFuture(
                .json(
                    IPHealthBody(
                        backoffMs: configuration.backoff.nanoseconds / 1_000_000,
                        maxBackoffMs: configuration.maxBackoff.nanoseconds / 1_000_000,
                        ips: ipHealth?.snapshot() ?? []
                    )
                )
            )
        case (.GET, "/cache"):
            let entries = resolvers?.caching?.snapshot().sorted { $0.name < $1.name } ?? []
            return eventLoop.makeSucceededFuture(.json(CacheBody(entries: entries)))
        case (.DELETE, "/cache"), (.POST, "/cache/purge"):
            return purge(host: query["host"].flatMap { $0.isEmpty ? nil : $0 }, on: eventLoop)
        case (.GET, "/resolve"):
            guard let host = query["host"], !host.isEmpty else {
                return eventLoop.makeSucceededFuture(.text(.badRequest, "usage: /resolve?host=NAME"))
            }
            guard let resolvers else {
                return eventLoop.makeSucceededFuture(.text(.conflict, "no resolver configured"))
            }
            return resolvers.upstreamResolver.resolve(host: host, port: 0, on: eventLoop).map { resolution in
                .json(ResolveBody(host: host, source: resolution.source.rawValue, addresses: resolution.addresses.compactMap(\.ipAddress)))
            }.recover { error in
                .text(.badGateway, "\(host): \(error)")
            }
        case (_, "/healthz"), (_, "/stats"), (_, "/resolve"), (_, "/health/ips"), (_, "/metrics"), (_, "/"), (_, "/proxy.pac"), (_, "/reload"), (_, "/audit"), (_, "/errors"):
            return eventLoop.makeSucceededFuture(.text(.methodNotAllowed, "use GET"))
        case (_, "/cache"):
            return eventLoop.makeSucceededFuture(.text(.methodNotAllowed, "use GET, or DELETE /cache?host=NAME to purge"))
        default:
            return eventLoop.makeSucceededFuture(.text(.notFound, "not found: \(path.prefix(100)) (try /, /healthz, /metrics, /stats, /cache, /resolve?host=, /health/ips, /audit, /errors, /proxy.pac)"))
        }
    }

    struct StatsBody: Encodable {
        var totals: DomainStats?
        var domains: [DomainStats]
        var access: AccessStats?
        var network: NetworkChangeStats?
        /// Alibaba v2 service-IP scheduling (absent for other providers).
        var alibabaScheduler: AlibabaSchedulerSnapshot? = nil
        /// Configuration reloads, options named as `--help` spells them (absent without a reloader).
        var reload: ReloadStatus? = nil
    }

    /// `/health/ips`: the back-off settings and every endpoint the proxy has dialed.
    struct IPHealthBody: Encodable {
        var backoffMs: Int64
        var maxBackoffMs: Int64
        var ips: [IPHealthSnapshot]
    }

    struct CacheBody: Encodable {
        var entries: [CacheEntrySnapshot]
    }

    struct ResolveBody: Encodable {
        var host: String
        var source: String
        var addresses: [String]
    }
}

final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let routes: AdminRoutes
    private var head: HTTPRequestHead?
    /// A request must be complete within this time of the connection opening or of the previous
    /// response: it bounds slow heads and idle keep-alive connections alike.
    private let requestTimeout: TimeAmount
    private var deadline: Scheduled<Void>?
    /// Set for a client outside the ACL: every request gets 403 with this text, then close.
    private let refusal: String?

    init(routes: AdminRoutes, requestTimeout: TimeAmount, refusal: String? = nil) {
        self.routes = routes
        self.requestTimeout = requestTimeout
        self.refusal = refusal
    }

    func handlerAdded(context: ChannelHandlerContext) {
        armDeadline(context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    private func armDeadline(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: requestTimeout) {
            context.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            deadline?.cancel()
            deadline = nil
            let components = URLComponents(string: head.uri)
            var query: [String: String] = [:]
            for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
            let path = components?.path ?? head.uri
            // Liveness is no secret: probes from a node (Kubernetes) need not be in the ACL.
            if let refusal, path != "/healthz" {
                write(.text(.forbidden, refusal), for: head, close: true, context: context)
                return
            }
            guard AdminServer.isAcceptableHost(head.headers.first(name: "host")) else {
                write(
                    .text(.forbidden, "the admin listener answers only to an IP address or localhost as Host (a guard against DNS rebinding)"),
                    for: head, close: true, context: context)
                return
            }
            // A browser adds Origin to cross-site POST/DELETE: a page elsewhere must not purge the
            // cache (or change anything) through a user's browser. Tools send no Origin; the admin
            // page's own requests carry this listener's origin.
            if [.POST, .DELETE, .PUT, .PATCH].contains(head.method), let origin = head.headers.first(name: "origin"),
               origin != "http://" + (head.headers.first(name: "host") ?? "")
            {
                write(.text(.forbidden, "cross-site request refused: Origin \(ProxyError.sanitized(origin)) is not this admin listener"),
                      for: head, close: true, context: context)
                return
            }
            routes.respond(method: head.method, path: path, query: query, requestHost: head.headers.first(name: "host"), on: context.eventLoop)
                .assumeIsolated()
                .whenSuccess { response in
                    self.write(response, for: head, context: context)
                }
        }
    }

    private func write(_ response: AdminRoutes.Response, for head: HTTPRequestHead, close: Bool = false, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: response.body.utf8.count)
        buffer.writeString(response.body)
        var responseHead = HTTPResponseHead(version: head.version, status: response.status)
        responseHead.headers.add(name: "Content-Type", value: response.contentType)
        responseHead.headers.add(name: "Content-Length", value: String(buffer.readableBytes))
        responseHead.headers.add(name: "Cache-Control", value: "no-store")
        if close { responseHead.headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let keepAlive = head.isKeepAlive && !close
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            if !keepAlive { context.close(promise: nil) }
        }
        if keepAlive { armDeadline(context: context) }
    }
}

@available(*, unavailable)
extension AdminHandler: Sendable {}

/// Counts open admin connections; beyond the limit new ones are closed at accept.
final class AdminConnectionLimit: Sendable {
    private let count = Atomic<Int>(0)
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes a slot, or returns false (and takes none) when all are in use.
    func open() -> Bool {
        let now = count.wrappingAdd(1, ordering: .relaxed).newValue
        if now > limit {
            count.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func closed() {
        count.wrappingSubtract(1, ordering: .relaxed)
    }
}

import HTTPDNS
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ProxyConfig
import ProxyKit
import ProxyUpstream
import ServiceLifecycle

/// The DNS listener (`--dns-listen`) as a service: UDP and TCP on the same address (a configured
/// port 0 becomes one free port for both), serving until graceful shutdown.
package final class DNSServer: Service, Sendable {
    /// TCP connections open at most; more are closed at accept.
    static let maximumTCPConnections = 512
    /// Datagrams read per system call (recvmmsg).
    static let vectorReadCount = 32
    /// A TCP connection without a query for this long is closed (RFC 7766 section 6.2.3).
    static let tcpIdleTimeout = TimeAmount.seconds(10)

    let listen: HostPort
    let group: any EventLoopGroup
    let responder: DNSResponder
    let logger: Logger
    let ownListeners: OwnListeners?
    private let tcpConnections = NIOLockedValueBox(0)

    package init(listen: HostPort, group: any EventLoopGroup, responder: DNSResponder, logger: Logger, ownListeners: OwnListeners? = nil) {
        self.listen = listen
        self.group = group
        self.responder = responder
        self.logger = logger
        self.ownListeners = ownListeners
    }

    package func run() async throws {
        // UDP and TCP share the port. With port 0 the kernel picks a free UDP port, which TCP
        // may have in use (another socket's ephemeral port): then both are tried again.
        let attempts = listen.port == 0 ? 20 : 1
        var bound: (udp: any Channel, tcp: any Channel)?
        for attempt in 1...attempts where bound == nil {
            let udp: any Channel
            do {
                udp = try await bindUDP()
            } catch {
                throw ListenerBindError(listener: "dns", option: "--dns-listen", host: listen.host, port: listen.port, error: error)
            }
            let port = udp.localAddress?.port ?? listen.port
            do {
                bound = (udp, try await bindTCP(port: port))
            } catch {
                try? await udp.close()
                if attempt == attempts {
                    throw ListenerBindError(listener: "dns", option: "--dns-listen", host: listen.host, port: port, error: error)
                }
            }
        }
        guard let bound else { return }
        let (udp, tcp) = bound
        if let address = udp.localAddress {
            ownListeners?.add(address)
            logger.info("dns listening", metadata: ["address": "\(address.endpointText)", "transports": "udp,tcp"])
        }
        try? await gracefulShutdown()
        try? await udp.close()
        try? await tcp.close()
    }

    private func bindUDP() async throws -> any Channel {
        let responder = self.responder
        return try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            // Vector reads split one receive buffer evenly between the messages: 2 KiB each
            // (a query longer than that is cut, then refused as longer than 1024 bytes).
            .channelOption(.datagramVectorReadMessageCount, value: Self.vectorReadCount)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: Self.vectorReadCount * 2048))
            .channelOption(.maxMessagesPerRead, value: 64)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DNSUDPHandler(responder: responder))
                }
            }
            .bind(host: listen.host, port: listen.port).get()
    }

    private func bindTCP(port: Int) async throws -> any Channel {
        let responder = self.responder
        let connections = tcpConnections
        return try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .pausingAcceptOnShortage("dns-tcp", logger: logger)
            .childChannelInitializer { channel in
                let admitted = responder.isAllowed(channel.remoteAddress) && connections.withLockedValue { open in
                    guard open < Self.maximumTCPConnections else { return false }
                    open += 1
                    return true
                }
                guard admitted else { return channel.close() }
                channel.closeFuture.whenComplete { _ in connections.withLockedValue { $0 -= 1 } }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(IdleStateHandler(readTimeout: Self.tcpIdleTimeout))
                    try sync.addHandler(ByteToMessageHandler(DNSTCPFrameDecoder()))
                    try sync.addHandler(DNSTCPHandler(responder: responder))
                }
            }
            .bind(host: listen.host, port: port).get()
    }
}

extension DNSResponder {
    /// The responder the DNS and DoH listeners share (one rate limit, one set of counters).
    /// `allowed`: the client ACL in force (a reload may change it). `health`: orders the addresses
    /// of answers. Forwarded queries go to `dns-upstream` or resolv.conf's nameservers, without the
    /// DNS listener itself.
    package static func make(
        configuration: ProxyConfiguration, caching: CachingResolver<ContinuousClock>?, health: IPHealthRegistry?,
        allowed: @escaping @Sendable () -> [CIDR], metrics: DNSMetrics?, queryLog: DNSQueryLog? = nil, localRecords: LocalRecords? = nil,
        logger: Logger
    ) -> DNSResponder {
        func usable(_ list: [HostPort]) -> [SocketAddress] {
            // Never the listener itself: a zone rule must not make it forward to itself.
            let list = configuration.dnsListen.map { ResolvConf.excludingListener(list, listener: $0) } ?? list
            return list.compactMap { try? SocketAddress(ipAddress: $0.host, port: $0.port) }
        }
        let upstreams = usable(configuration.dnsUpstreams.isEmpty ? ResolvConf.nameservers() : configuration.dnsUpstreams)
        var zoneUpstreams: [String: [SocketAddress]] = [:]
        for (zone, list) in configuration.dnsForwardZones.upstreams {
            zoneUpstreams[zone] = usable(list)
            if zoneUpstreams[zone]!.isEmpty {
                logger.warning("a forward zone's only resolver is the DNS listener itself: its names are answered SERVFAIL", metadata: ["zone": "\(zone)"])
            }
        }
        if upstreams.isEmpty {
            logger.warning("the DNS listener has no upstream resolvers: forwarded queries are answered SERVFAIL")
        }
        return DNSResponder(
            caching: caching,
            routing: DNSRouting(forwardZones: configuration.dnsForwardZones, systemOnly: configuration.systemDNSDomains, hasCache: caching != nil),
            forwarder: DNSForwarder(upstreams: upstreams, timeout: configuration.resolverTimeout),
            health: health, allowed: allowed, rateLimit: configuration.dnsRateLimit, metrics: metrics,
            negativeTTLCap: configuration.negativeTTL.duration, fallback: configuration.systemFallback,
            forwardCache: .init(
                capacity: configuration.dnsCacheSize, minTTL: UInt32(clamping: configuration.dnsCacheMinTTL.nanoseconds / 1_000_000_000),
                maxTTL: UInt32(clamping: configuration.dnsCacheMaxTTL.nanoseconds / 1_000_000_000), staleWindow: configuration.maxStale.duration),
            zoneUpstreams: zoneUpstreams, queryLog: queryLog, localRecords: localRecords
        )
    }
}

/// One datagram in, at most one out: cache hits are written at once and flushed together, once
/// per `flushEvery` answers (one `recvmmsg` batch's worth, sent with one `sendmmsg`) and at the end
/// of the read burst, so no answer waits for a whole burst (up to 64 batches) to be read; answers
/// that wait for a query are written when they come.
final class DNSUDPHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let responder: DNSResponder
    /// Answers written since the last flush.
    private var pending = 0
    let flushEvery: Int
    /// The datagram being answered, in storage reused from one datagram to the next: a query
    /// answered at once has let go of it by then, so no allocation; one that waits (a miss, a
    /// forward) still holds it, and copy-on-write gives the next datagram new storage.
    private var datagram: [UInt8] = []
    /// The answer to a cache hit, written here (storage reused the same way) and copied into the
    /// outgoing buffer.
    private var answer: [UInt8] = []

    init(responder: DNSResponder, flushEvery: Int = DNSServer.vectorReadCount) {
        self.responder = responder
        self.flushEvery = max(1, flushEvery)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let remote = envelope.remoteAddress
        datagram.removeAll(keepingCapacity: true)
        datagram.append(contentsOf: envelope.data.readableBytesView)
        guard let reply = responder.respond(datagram, from: remote, transport: .udp, on: context.eventLoop, into: &answer) else {
            send(answer, to: remote, context: context)  // a cache hit, written into `answer`
            return
        }
        switch reply {
        case .now(let answer?):
            send(answer, to: remote, context: context)
        case .now(nil):
            break
        case .later(let future):
            let channel = context.channel
            future.whenSuccess { answer in
                guard let answer else { return }
                let buffer = channel.allocator.buffer(bytes: answer)
                channel.writeAndFlush(AddressedEnvelope(remoteAddress: remote, data: buffer), promise: nil)
            }
        }
    }

    /// Written at once, flushed with the batch.
    private func send(_ answer: [UInt8], to remote: SocketAddress, context: ChannelHandlerContext) {
        let buffer = context.channel.allocator.buffer(bytes: answer)
        context.write(wrapOutboundOut(AddressedEnvelope(remoteAddress: remote, data: buffer)), promise: nil)
        pending += 1
        if pending >= flushEvery {
            pending = 0
            context.flush()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if pending > 0 {
            pending = 0
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    /// A send that failed (e.g. ICMP unreachable reported on the socket) concerns one client only.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}

/// Length-framed queries in, answers out in the order they are ready (RFC 7766 allows any order).
final class DNSTCPHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let responder: DNSResponder

    init(responder: DNSResponder) {
        self.responder = responder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = Array(unwrapInboundIn(data).readableBytesView)
        let remote = context.channel.remoteAddress
        switch responder.respond(bytes, from: remote, transport: .tcp, on: context.eventLoop) {
        case .now(let answer?):
            context.writeAndFlush(wrapOutboundOut(DNSTCPFrameDecoder.frame(answer, allocator: context.channel.allocator)), promise: nil)
        case .now(nil):
            // Not a query: nothing sensible can follow on this stream.
            context.close(promise: nil)
        case .later(let future):
            let channel = context.channel
            future.whenSuccess { answer in
                guard let answer else { return }
                channel.writeAndFlush(DNSTCPFrameDecoder.frame(answer, allocator: channel.allocator), promise: nil)
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

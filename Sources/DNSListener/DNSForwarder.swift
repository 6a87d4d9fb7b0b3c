import NIOCore
import NIOPosix

import NIOConcurrencyHelpers

/// Relays a query to the upstream resolvers, one after the other until one answers: over UDP from
/// a fresh socket (ephemeral port) per query, or over TCP for a client that came over TCP. The
/// query goes out with a random ID; only an answer from the upstream's address with that ID counts.
/// An upstream that failed is tried after the others for `backoff` (health, as for origins).
final class DNSForwarder: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let upstreams: [SocketAddress]
    /// Per upstream.
    let timeout: TimeAmount
    /// How long an upstream that failed goes behind the others.
    static let backoff = TimeAmount.seconds(30)
    /// When each upstream last failed (cleared when it answers).
    private let failures = NIOLockedValueBox<[SocketAddress: NIODeadline]>([:])

    init(upstreams: [SocketAddress], timeout: TimeAmount) {
        self.upstreams = upstreams
        self.timeout = timeout
    }

    /// `list` with the upstreams that failed within `backoff` moved behind the others (each group
    /// in its configured order).
    func ordered(_ list: [SocketAddress], now: NIODeadline) -> [SocketAddress] {
        let failed = failures.withLockedValue { failures in Set(list.filter { failures[$0].map { now - $0 < Self.backoff } ?? false }) }
        guard !failed.isEmpty else { return list }
        return list.filter { !failed.contains($0) } + list.filter { failed.contains($0) }
    }

    /// The first answer to `query` from `upstreams` (a zone's own; nil: the default ones), its ID
    /// still the random one (the caller restores the client's).
    func forward(_ query: [UInt8], tcp: Bool, to zoneUpstreams: [SocketAddress]? = nil, on eventLoop: any EventLoop) -> EventLoopFuture<[UInt8]> {
        guard query.count >= 12 else { return eventLoop.makeFailedFuture(Failure(description: "not a query")) }
        let list = ordered(zoneUpstreams ?? upstreams, now: .now())
        guard !list.isEmpty else { return eventLoop.makeFailedFuture(Failure(description: "no upstream resolvers")) }
        @Sendable func attempt(_ index: Int) -> EventLoopFuture<[UInt8]> {
            let id = UInt16.random(in: 0...UInt16.max)
            var message = query
            message[0] = UInt8(id >> 8)
            message[1] = UInt8(id & 0xFF)
            let upstream = list[index]
            let answer = tcp ? exchangeTCP(message, id: id, with: upstream, on: eventLoop) : exchangeUDP(message, id: id, with: upstream, on: eventLoop)
            return answer.map { response in
                self.failures.withLockedValue { $0[upstream] = nil }
                return response
            }.flatMapError { error in
                self.failures.withLockedValue { $0[upstream] = .now() }
                return index + 1 < list.count ? attempt(index + 1) : eventLoop.makeFailedFuture(error)
            }
        }
        return attempt(0)
    }

    private func exchangeUDP(_ message: [UInt8], id: UInt16, with upstream: SocketAddress, on eventLoop: any EventLoop) -> EventLoopFuture<[UInt8]> {
        let promise = eventLoop.makePromise(of: [UInt8].self)
        let bind = upstream.protocol == .inet6 ? "::" : "0.0.0.0"
        DatagramBootstrap(group: eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(UDPExchangeHandler(upstream: upstream, id: id, promise: promise))
                }
            }
            .bind(host: bind, port: 0)
            .whenComplete { result in
                self.send(over: result, to: upstream, promise: promise, on: eventLoop) { channel in
                    let buffer = channel.allocator.buffer(bytes: message)
                    return channel.writeAndFlush(AddressedEnvelope(remoteAddress: upstream, data: buffer))
                }
            }
        return promise.futureResult
    }

    private func exchangeTCP(_ message: [UInt8], id: UInt16, with upstream: SocketAddress, on eventLoop: any EventLoop) -> EventLoopFuture<[UInt8]> {
        let promise = eventLoop.makePromise(of: [UInt8].self)
        ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(DNSTCPFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(TCPExchangeHandler(id: id, promise: promise))
                }
            }
            .connect(to: upstream)
            .whenComplete { result in
                self.send(over: result, to: upstream, promise: promise, on: eventLoop) { channel in
                    channel.writeAndFlush(DNSTCPFrameDecoder.frame(message, allocator: channel.allocator))
                }
            }
        return promise.futureResult
    }

    /// Once the exchange's channel is up (UDP bound or TCP connected): the answer's deadline, the
    /// channel's close when the exchange ends either way, and the query's write.
    private func send(
        over result: Result<any Channel, any Error>,
        to upstream: SocketAddress,
        promise: EventLoopPromise<[UInt8]>,
        on eventLoop: any EventLoop,
        write: (any Channel) -> EventLoopFuture<Void>
    ) {
        switch result {
        case .failure(let error):
            promise.fail(error)
        case .success(let channel):
            let timeout = eventLoop.scheduleTask(in: self.timeout) {
                promise.fail(Failure(description: "no answer from \(upstream) within \(self.timeout)"))
            }
            promise.futureResult.whenComplete { _ in
                timeout.cancel()
                channel.close(promise: nil)
            }
            write(channel).whenFailure { promise.fail($0) }
        }
    }
}

/// Takes the first datagram from the upstream with the query's ID that is a response.
private final class UDPExchangeHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let upstream: SocketAddress
    let id: UInt16
    let promise: EventLoopPromise<[UInt8]>

    init(upstream: SocketAddress, id: UInt16, promise: EventLoopPromise<[UInt8]>) {
        self.upstream = upstream
        self.id = id
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard envelope.remoteAddress == upstream else { return }
        let bytes = Array(envelope.data.readableBytesView)
        guard DNSTCPFrameDecoder.isResponse(bytes, id: id) else { return }
        promise.succeed(bytes)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
    }
}

/// Takes the first framed response with the query's ID; a close before it is a failure.
private final class TCPExchangeHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let id: UInt16
    let promise: EventLoopPromise<[UInt8]>

    init(id: UInt16, promise: EventLoopPromise<[UInt8]>) {
        self.id = id
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = Array(unwrapInboundIn(data).readableBytesView)
        guard DNSTCPFrameDecoder.isResponse(bytes, id: id) else { return }
        promise.succeed(bytes)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(DNSForwarder.Failure(description: "the upstream closed the connection without an answer"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
    }
}

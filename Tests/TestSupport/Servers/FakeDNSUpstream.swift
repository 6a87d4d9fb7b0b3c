import HTTPDNS
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A DNS server on loopback (UDP and TCP on one port) standing in for the cluster DNS the DNS
/// listener forwards to: every A question gets `address`, every TXT question the text "upstream",
/// SRV and MX questions under cluster.local one record each, anything else NXDOMAIN (with an SOA).
/// Every TTL is 30 s. Counts the questions it saw by name.
package final class FakeDNSUpstream: TestServer {
    package let port: Int
    private let udp: any Channel
    private let tcp: any Channel
    private let seen: NIOLockedValueBox<[String]>

    private init(port: Int, udp: any Channel, tcp: any Channel, seen: NIOLockedValueBox<[String]>) {
        self.port = port
        self.udp = udp
        self.tcp = tcp
        self.seen = seen
    }

    package static func start(address: [UInt8] = [10, 96, 0, 42]) async throws -> FakeDNSUpstream {
        let group = MultiThreadedEventLoopGroup.singleton
        let seen = NIOLockedValueBox<[String]>([])
        let answer: @Sendable ([UInt8]) -> [UInt8]? = { bytes in
            guard let query = try? DNSQuery.parse(bytes) else { return nil }
            seen.withLockedValue { $0.append("\(query.name ?? "?")/\(query.type)") }
            switch query.type {
            case 1: return DNSAnswerBuilder.answer(to: query, rcode: 0, records: [.init(type: 1, ttl: 30, rdata: address)])
            case 16: return DNSAnswerBuilder.answer(to: query, rcode: 0, records: [.init(type: 16, ttl: 30, rdata: [8] + Array("upstream".utf8))])
            case 33 where query.name?.hasSuffix("cluster.local") == true:
                // SRV 10 5 8080 target.cluster.local.
                let target: [UInt8] = [6] + Array("target".utf8) + [7] + Array("cluster".utf8) + [5] + Array("local".utf8) + [0]
                return DNSAnswerBuilder.answer(to: query, rcode: 0, records: [.init(type: 33, ttl: 30, rdata: [0, 10, 0, 5, 0x1F, 0x90] + target)])
            case 15 where query.name?.hasSuffix("cluster.local") == true:
                // MX 10 mail.cluster.local.
                let exchange: [UInt8] = [4] + Array("mail".utf8) + [7] + Array("cluster".utf8) + [5] + Array("local".utf8) + [0]
                return DNSAnswerBuilder.answer(to: query, rcode: 0, records: [.init(type: 15, ttl: 30, rdata: [0, 10] + exchange)])
            default:
                // With the SOA a resolver needs to cache the NXDOMAIN (RFC 2308).
                return DNSAnswerBuilder.answer(to: query, rcode: 3, negativeTTL: 30)
            }
        }
        // UDP on a free port, then TCP on the same number, which another socket of the machine
        // may hold (a client's ephemeral port): then both again on another port.
        var attempt = 0
        while true {
            attempt += 1
            let udp = try await DatagramBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(UDPAnswerer(answer: answer)) }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            guard let port = udp.localAddress?.port else {
                try? await udp.close()
                throw TestOriginError.noPort
            }
            do {
                let bootstrap = ServerBootstrap(group: group)
                    .childChannelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(TCPAnswerer(answer: answer)) }
                    }
                let (tcp, _) = try await LoopbackListener.bind(bootstrap, host: "127.0.0.1", port: port)
                return FakeDNSUpstream(port: port, udp: udp, tcp: tcp, seen: seen)
            } catch {
                try? await udp.close()
                if attempt >= 32 { throw error }
            }
        }
    }

    /// "name/type" of every question so far.
    package var questions: [String] { seen.withLockedValue { $0 } }

    /// The UDP socket and the TCP listener.
    package var listeners: [any Channel] { [udp, tcp] }
}

private final class UDPAnswerer: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>
    let answer: @Sendable ([UInt8]) -> [UInt8]?
    init(answer: @escaping @Sendable ([UInt8]) -> [UInt8]?) { self.answer = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let reply = answer(Array(envelope.data.readableBytesView)) else { return }
        let buffer = context.channel.allocator.buffer(bytes: reply)
        context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: buffer)), promise: nil)
    }
}

/// Reads whole length-framed queries (a test sends small ones) and answers each.
private final class TCPAnswerer: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let answer: @Sendable ([UInt8]) -> [UInt8]?
    private var pending: [UInt8] = []
    init(answer: @escaping @Sendable ([UInt8]) -> [UInt8]?) { self.answer = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        pending += Array(unwrapInboundIn(data).readableBytesView)
        while pending.count >= 2 {
            let length = Int(pending[0]) << 8 | Int(pending[1])
            guard pending.count >= 2 + length else { return }
            let message = Array(pending[2..<(2 + length)])
            pending.removeFirst(2 + length)
            guard let reply = answer(message) else { continue }
            var buffer = context.channel.allocator.buffer(capacity: reply.count + 2)
            buffer.writeInteger(UInt16(reply.count))
            buffer.writeBytes(reply)
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        }
    }
}

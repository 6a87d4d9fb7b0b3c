import Foundation
import NIOCore
import NIOPosix
import OpenSSLTLS
import TestSupport

/// A raw HTTP/1.1 response, parsed by `ResponseCollector`.
struct RawHTTPResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        self.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var bodyString: String { String(decoding: self.body, as: UTF8.self) }
}

/// Everything one client connection produced.
struct ClientOutcome: Sendable {
    var handshake: TLSClientEvent?
    var response: RawHTTPResponse?
    var tlsError: TLSError?
    var otherErrors: [String] = []

    var resumed: Bool? {
        if case .handshakeCompleted(_, let resumed, _) = self.handshake { return resumed }
        return nil
    }

    var negotiatedProtocol: String? {
        if case .handshakeCompleted(let alpn, _, _) = self.handshake { return alpn }
        return nil
    }

    var tlsVersion: String? {
        if case .handshakeCompleted(_, _, let version) = self.handshake { return version }
        return nil
    }
}

/// Collects plaintext above `OpenSSLHandler`; completes `outcome` when a whole response
/// (by Content-Length) has arrived, or when the channel closes.
final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let outcomePromise: EventLoopPromise<ClientOutcome>
    let closedPromise: EventLoopPromise<ClientOutcome>
    private var outcome = ClientOutcome()
    private var bytes: [UInt8] = []
    /// With auto-read off: ask for more only after the handshake and after each delivered batch,
    /// like a back-pressure-aware glue handler would.
    private let readOnDemand: Bool

    init(outcome: EventLoopPromise<ClientOutcome>, closed: EventLoopPromise<ClientOutcome>, readOnDemand: Bool = false) {
        self.outcomePromise = outcome
        self.closedPromise = closed
        self.readOnDemand = readOnDemand
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSClientEvent {
            self.outcome.handshake = event
            if self.readOnDemand { context.read() }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.readOnDemand { context.read() }
        context.fireChannelReadComplete()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.bytes += self.unwrapInboundIn(data).readableBytesView
        if let response = Self.parse(self.bytes) {
            self.outcome.response = response
            self.outcomePromise.succeed(self.outcome)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? TLSError {
            self.outcome.tlsError = error
        } else {
            self.outcome.otherErrors.append(String(describing: error))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.outcomePromise.succeed(self.outcome)
        self.closedPromise.succeed(self.outcome)
        context.fireChannelInactive()
    }

    static func parse(_ bytes: [UInt8]) -> RawHTTPResponse? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.dropLast(3).first(where: { bytes[$0..<($0 + 4)].elementsEqual(separator) }) else {
            return nil
        }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let length = Int(headers.first { $0.0.lowercased() == "content-length" }?.1 ?? "0") ?? 0
        let bodyStart = end + 4
        guard bytes.count >= bodyStart + length else { return nil }
        return RawHTTPResponse(status: status, headers: headers, body: Array(bytes[bodyStart..<(bodyStart + length)]))
    }
}

/// A connected test client.
struct TLSTestConnection {
    let channel: any Channel
    let outcome: EventLoopFuture<ClientOutcome>
    let closed: EventLoopFuture<ClientOutcome>

    /// Connects to `host:port` (the dialed IP) with TLS for `serverName`.
    static func connect(
        host: String,
        port: Int,
        context: TLSClientContext,
        serverName: String,
        spkiPins: [String] = [],
        autoRead: Bool = true
    ) async throws -> TLSTestConnection {
        let group = MultiThreadedEventLoopGroup.singleton
        let eventLoop = group.next()
        let outcome = eventLoop.makePromise(of: ClientOutcome.self)
        let closed = eventLoop.makePromise(of: ClientOutcome.self)
        let channel = try await ClientBootstrap(group: eventLoop)
            .channelOption(ChannelOptions.autoRead, value: autoRead)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        OpenSSLHandler(context: context, serverName: serverName, port: port, spkiPins: spkiPins)
                    )
                    try channel.pipeline.syncOperations.addHandler(ResponseCollector(outcome: outcome, closed: closed, readOnDemand: !autoRead))
                }
            }
            .connect(host: host, port: port)
            .get()
        return TLSTestConnection(channel: channel, outcome: outcome.futureResult, closed: closed.futureResult)
    }

    /// Writes a request right away (before the handshake has completed) and waits for the
    /// whole response, or for the connection to end.
    func request(
        _ method: String = "GET",
        _ path: String,
        host: String,
        body: [UInt8] = [],
        close: Bool = false
    ) async throws -> ClientOutcome {
        var request = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nContent-Length: \(body.count)\r\n"
        if close { request += "Connection: close\r\n" }
        request += "\r\n"
        var buffer = self.channel.allocator.buffer(capacity: request.utf8.count + body.count)
        buffer.writeString(request)
        buffer.writeBytes(body)
        self.channel.writeAndFlush(buffer, promise: nil)
        return try await self.outcome.get()
    }

    /// Closes (sending close_notify) and waits until the channel is inactive.
    func close() async throws -> ClientOutcome {
        try? await self.channel.close()
        return try await self.closed.get()
    }
}

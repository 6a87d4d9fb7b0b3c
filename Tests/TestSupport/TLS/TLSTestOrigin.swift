import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// An in-process HTTPS/1.1 origin (swift-nio-ssl / BoringSSL) on a loopback address, port 0.
///
/// Routes:
/// - `GET /hello` → 200 "hello"
/// - `GET /bytes/N` → 200 with N bytes of `TLSTestOrigin.patternBody(count:)`
/// - `POST /echo` (or PUT) → 200 with the request body
/// - anything else → 404
/// Every response carries `X-Seen-Host` (the request's Host header) and a Content-Length.
///
/// For each accepted connection it records what the ClientHello revealed (SNI, ALPN offer,
/// resumption offer), the Host headers seen, and whether the client ended the session with a
/// close_notify: see `connections` and `waitForClosedConnections(_:timeout:)`.
///
/// ```swift
/// let ca = try TestCA()
/// let leaf = try ca.issueLeaf(dnsNames: ["origin.test"])
/// let origin = try await TLSTestOrigin.start(certificatePEM: leaf.certificatePEM, privateKeyPEM: leaf.privateKeyPEM)
/// defer { Task { try await origin.shutdown() } }   // or call shutdown() at the end
/// // connect to origin.host : origin.port, verify as "origin.test" against ca.writeCAFile()
/// ```
public final class TLSTestOrigin: Sendable {
    /// TLS versions the origin can be limited to.
    public enum TLSVersionLimit: Sendable {
        case tls12
        case tls13
    }

    /// What the origin saw on one TCP connection.
    public struct Connection: Sendable {
        /// Nil until the whole ClientHello has arrived (or if it could not be parsed).
        public var clientHello: ClientHelloSummary?
        /// The SNI the client presented (nil: none sent, or no ClientHello seen).
        public var serverName: String? { self.clientHello?.serverName }
        /// ALPN protocol the server selected, if the handshake completed.
        public var negotiatedProtocol: String?
        public var handshakeCompleted = false
        /// Host header of every request, in order.
        public var requestHosts: [String] = []
        /// The client sent close_notify (a clean TLS shutdown) before the connection ended.
        public var receivedCloseNotify = false
        /// The TCP connection ended without the client's close_notify (swift-nio-ssl's uncleanShutdown).
        public var uncleanShutdown = false
        public var isClosed = false
        /// Errors the server pipeline saw, as text.
        public var errors: [String] = []
    }

    /// The loopback address the origin listens on ("127.0.0.1" or "::1").
    public let host: String
    /// The port the kernel assigned.
    public let port: Int

    private let channel: any Channel
    private let state: Guarded<State>

    fileprivate struct State {
        var connections: [Connection] = []
        var waiters: [(count: Int, promise: EventLoopPromise<[Connection]>)] = []

        var closed: [Connection] { self.connections.filter(\.isClosed) }
    }

    private init(host: String, port: Int, channel: any Channel, state: Guarded<State>) {
        self.host = host
        self.port = port
        self.channel = channel
        self.state = state
    }

    /// Starts an origin serving `certificatePEM` (leaf first, then any intermediates) with `privateKeyPEM`.
    /// - Parameters:
    ///   - host: a loopback address: "127.0.0.1" (default) or "::1".
    ///   - port: 0 (default) lets the kernel choose; a fixed port puts two origins on different
    ///     loopback addresses behind one URL port (e.g. 127.0.0.1:P and 127.0.0.2:P).
    ///   - applicationProtocols: ALPN protocols the server accepts; empty disables ALPN.
    ///   - maximumTLSVersion: limit the server to TLS 1.2 to test that path; default TLS 1.3.
    public static func start(
        certificatePEM: String,
        privateKeyPEM: String,
        host: String = "127.0.0.1",
        port: Int = 0,
        applicationProtocols: [String] = ["http/1.1"],
        maximumTLSVersion: TLSVersionLimit? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> TLSTestOrigin {
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8))
        let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        configuration.applicationProtocols = applicationProtocols
        switch maximumTLSVersion {
        case .tls12: configuration.maximumTLSVersion = .tlsv12
        case .tls13: configuration.maximumTLSVersion = .tlsv13
        case nil: break
        }
        let sslContext = try NIOSSLContext(configuration: configuration)
        let state = Guarded(State())

        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let index = state.withLock { state in
                    state.connections.append(Connection())
                    return state.connections.count - 1
                }
                let recorder = ConnectionRecorder(index: index, state: state)
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ClientHelloRecorderHandler(recorder: recorder))
                    try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                    try sync.addHandler(TLSObserverHandler(recorder: recorder))
                    try sync.configureHTTPServerPipeline(withErrorHandling: true)
                    try sync.addHandler(OriginHTTPHandler(recorder: recorder))
                }
            }
            .bind(host: host, port: port)
            .get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw TestCAError("origin has no local port")
        }
        return TLSTestOrigin(host: host, port: port, channel: channel, state: state)
    }

    /// A snapshot of every connection so far, in accept order.
    public var connections: [Connection] {
        self.state.withLock { $0.connections }
    }

    /// Waits until at least `count` connections have closed; returns the closed ones in accept
    /// order. Throws if that has not happened within `timeout` (a guard, not a wait).
    public func waitForClosedConnections(_ count: Int, timeout: TimeAmount = .seconds(10)) async throws -> [Connection] {
        let eventLoop = self.channel.eventLoop
        let promise = eventLoop.makePromise(of: [Connection].self)
        let ready: [Connection]? = self.state.withLock { state in
            let closed = state.closed
            if closed.count >= count { return closed }
            state.waiters.append((count, promise))
            return nil
        }
        if let ready {
            promise.succeed(ready)
        } else {
            let timer = eventLoop.scheduleTask(in: timeout) {
                promise.fail(TestCAError("fewer than \(count) origin connections closed within \(timeout)"))
            }
            promise.futureResult.whenComplete { _ in timer.cancel() }
        }
        return try await promise.futureResult.get()
    }

    /// Closes the listening socket (open connections are left to their clients).
    public func shutdown() async throws {
        try await self.channel.close()
    }

    /// The deterministic body of `GET /bytes/N`: byte i is i mod 251.
    public static func patternBody(count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 % 251) }
    }

    // MARK: Recording

    /// Updates one connection's record; shared by that connection's handlers.
    struct ConnectionRecorder: Sendable {
        let index: Int
        fileprivate let state: Guarded<State>

        func update(_ body: (inout Connection) -> Void) {
            let fire: [(EventLoopPromise<[Connection]>, [Connection])] = self.state.withLock { state in
                body(&state.connections[self.index])
                let closed = state.closed
                var fire: [(EventLoopPromise<[Connection]>, [Connection])] = []
                state.waiters.removeAll { waiter in
                    guard closed.count >= waiter.count else { return false }
                    fire.append((waiter.promise, closed))
                    return true
                }
                return fire
            }
            for (promise, closed) in fire { promise.succeed(closed) }
        }
    }
}

/// Copies the first bytes of the connection until the ClientHello can be parsed; passes
/// everything through unchanged.
private final class ClientHelloRecorderHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let recorder: TLSTestOrigin.ConnectionRecorder
    private var bytes: [UInt8] = []
    private var done = false

    init(recorder: TLSTestOrigin.ConnectionRecorder) { self.recorder = recorder }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !self.done {
            let buffer = self.unwrapInboundIn(data)
            self.bytes += buffer.readableBytesView
            do {
                if let summary = try ClientHelloSummary.parse(self.bytes) {
                    self.recorder.update { $0.clientHello = summary }
                    self.done = true
                }
            } catch {
                self.recorder.update { $0.errors.append("ClientHello: \(error)") }
                self.done = true
            }
            if self.done { self.bytes = [] }
        }
        context.fireChannelRead(data)
    }
}

/// Sits above NIOSSLServerHandler: records handshake completion, close_notify and errors.
private final class TLSObserverHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let recorder: TLSTestOrigin.ConnectionRecorder

    init(recorder: TLSTestOrigin.ConnectionRecorder) { self.recorder = recorder }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // NIOTLS.TLSUserEvent, matched by description (NIOTLS is not a dependency of this target).
        let text = String(describing: event)
        if text.hasPrefix("handshakeCompleted(") {
            let negotiated = text.split(separator: "\"").dropFirst().first.map(String.init)
            self.recorder.update {
                $0.handshakeCompleted = true
                $0.negotiatedProtocol = negotiated
            }
        } else if text == "shutdownCompleted" {
            self.recorder.update { $0.receivedCloseNotify = true }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.recorder.update {
            if let error = error as? NIOSSLError, error == .uncleanShutdown {
                $0.uncleanShutdown = true
            }
            $0.errors.append(String(describing: error))
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.recorder.update { $0.isClosed = true }
        context.fireChannelInactive()
    }
}

/// The origin's routes.
private final class OriginHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let recorder: TLSTestOrigin.ConnectionRecorder
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?

    init(recorder: TLSTestOrigin.ConnectionRecorder) { self.recorder = recorder }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            self.body = context.channel.allocator.buffer(capacity: 0)
            let host = head.headers.first(name: "host") ?? ""
            self.recorder.update { $0.requestHosts.append(host) }
        case .body(var chunk):
            self.body?.writeBuffer(&chunk)
        case .end:
            guard let head = self.head else { return }
            self.respond(context: context, head: head, requestBody: self.body ?? ByteBuffer())
            self.head = nil
            self.body = nil
        }
    }

    private func respond(context: ChannelHandlerContext, head: HTTPRequestHead, requestBody: ByteBuffer) {
        let status: HTTPResponseStatus
        var body: ByteBuffer
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        if head.method == .GET, path == "/hello" {
            status = .ok
            body = ByteBuffer(string: "hello")
        } else if head.method == .GET, path.hasPrefix("/bytes/"), let count = Int(path.dropFirst("/bytes/".count)), count >= 0 {
            status = .ok
            body = ByteBuffer(bytes: TLSTestOrigin.patternBody(count: count))
        } else if head.method == .POST || head.method == .PUT, path == "/echo" {
            status = .ok
            body = requestBody
        } else {
            status = .notFound
            body = ByteBuffer(string: "not found")
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        headers.add(name: "X-Seen-Host", value: head.headers.first(name: "host") ?? "")
        let keepAlive = head.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(self.wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let done = context.writeAndFlush(self.wrapOutboundOut(.end(nil)))
        if !keepAlive {
            done.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }
}

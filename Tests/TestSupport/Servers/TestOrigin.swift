import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// In-process HTTP/1.1 origin server (SwiftNIO) on a loopback address and an ephemeral port.
///
/// Routes:
/// - `GET /hello` → 200 "hello", echoing `X-Seen-Host`, `X-Seen-Via`, `X-Seen-Connection` ("none" when absent).
/// - `GET /bytes/N[?chunked=1]` → N pattern bytes (`BytePattern`), streamed in 64 KiB pieces with backpressure.
/// - `POST|PUT /digest` → `{"bytes":N,"fnv":"<hex>","te":"<TE or none>","cl":"<CL or none>"}`.
/// - `POST /expect` → like /digest, but first sends `100 Continue` if asked with `Expect: 100-continue`.
/// - `GET /slow` → never answers.
/// - `GET /close-delimited/N` → 200 without Content-Length/chunked, N pattern bytes, then close.
/// - `GET /reset` → closes the connection without answering.
/// - `GET /upgrade` (`Upgrade: echo`, `Connection: upgrade`) → 101, then raw echo of every byte.
/// - anything else → 404.
///
/// With `closeEverything`, every request is answered by closing the connection (an origin address
/// that accepts connections but is broken), still recorded and counted.
package final class TestOrigin: TestServer {
    package let host: String
    package let port: Int

    private let serverChannel: any Channel
    private let connections: Guarded<Int>
    private let children: Guarded<[any Channel]>
    private let recorded: Guarded<[HTTPRequestHead]>

    private init(
        host: String, port: Int, serverChannel: any Channel,
        connections: Guarded<Int>, children: Guarded<[any Channel]>, recorded: Guarded<[HTTPRequestHead]>
    ) {
        self.host = host
        self.port = port
        self.serverChannel = serverChannel
        self.connections = connections
        self.children = children
        self.recorded = recorded
    }

    /// Binds on `host` (a loopback address: 127.0.0.1, 127.0.0.2, ::1, ...) and `port` (0: any free
    /// port; a fixed one lets two origins on two loopback addresses share a port, like two IPs of
    /// one name).
    package static func start(host: String = "127.0.0.1", port: Int = 0, closeEverything: Bool = false) async throws -> TestOrigin {
        let connections = Guarded(0)
        let children = Guarded([any Channel]())
        let recorded = Guarded([HTTPRequestHead]())
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                connections.withLock { $0 += 1 }
                children.withLock { $0.append(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    let tap = RawTap()
                    let encoder = HTTPResponseEncoder()
                    let decoder = ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes))
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(tap, name: "raw-tap")
                    try sync.addHandler(decoder, name: "decoder")
                    try sync.addHandler(encoder, name: "encoder")
                    try sync.addHandler(HTTPServerPipelineHandler(), name: "pipelining")
                    try sync.addHandler(OriginHandler(recorder: recorded, rawTap: tap, closeEverything: closeEverything), name: "origin")
                }
            }
        let (channel, bound) = try await LoopbackListener.bind(bootstrap, host: host, port: port)
        return TestOrigin(host: host, port: bound, serverChannel: channel, connections: connections, children: children, recorded: recorded)
    }

    deinit {
        stop()
    }

    package var listeners: [any Channel] { [serverChannel] }
    package var accepted: [any Channel] { children.withLock { $0 } }

    /// "127.0.0.1:PORT", or "[::1]:PORT" for IPv6.
    package var authority: String {
        LoopbackListener.authority(host: host, port: port)
    }

    /// "http://AUTHORITY" + path (path starts with "/").
    package func url(_ path: String) -> String {
        "http://\(authority)\(path)"
    }

    /// TCP connections accepted so far.
    package var connectionCount: Int {
        connections.withLock { $0 }
    }

    /// Every request head received so far, in arrival order.
    package func requests() -> [HTTPRequestHead] {
        recorded.withLock { $0 }
    }

    // MARK: - Helpers for assertions

    /// FNV-1a 64 (hex) of the first `count` pattern bytes, as /digest would report it.
    package static func patternFNV(count: Int) -> String {
        BytePattern.fnvHex(count: count)
    }

    /// FNV-1a 64 (hex) of arbitrary bytes, as /digest would report it.
    package static func fnv(of data: Data) -> String {
        var hasher = FNV1a64()
        data.withUnsafeBytes { hasher.update($0) }
        return hasher.hex
    }

    /// Parses a /digest or /expect JSON answer.
    package static func parseDigest(_ body: Data) -> Digest? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let bytes = (object["bytes"] as? NSNumber)?.intValue,
              let fnv = object["fnv"] as? String,
              let te = object["te"] as? String,
              let cl = object["cl"] as? String
        else { return nil }
        return Digest(bytes: bytes, fnv: fnv, transferEncoding: te, contentLength: cl)
    }

    package struct Digest: Sendable, Equatable {
        package var bytes: Int
        package var fnv: String
        package var transferEncoding: String
        package var contentLength: String

        package init(bytes: Int, fnv: String, transferEncoding: String, contentLength: String) {
            self.bytes = bytes
            self.fnv = fnv
            self.transferEncoding = transferEncoding
            self.contentLength = contentLength
        }
    }
}

package enum TestOriginError: Error {
    case noPort
}

import NIOCore
import NIOHTTP1
import NIOPosix

/// An in-process HTTP/1.1 server on a chosen loopback address and an ephemeral port, counting
/// connections and recording requests (see `TestHTTPHandler` for its routes).
package final class TestHTTPServer: Sendable {
    package let address: String
    package let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let recorder: TestServerRecorder

    /// One event-loop thread, so the recorder and every connection share a single loop.
    package static func start(on address: String) async throws -> TestHTTPServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let recorder = TestServerRecorder(loop: group.next())
        do {
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(TestHTTPHandler(recorder: recorder))
                    }
                }
                .bind(host: address, port: 0)
                .get()
            return TestHTTPServer(address: address, group: group, channel: channel, recorder: recorder)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    private init(address: String, group: MultiThreadedEventLoopGroup, channel: any Channel, recorder: TestServerRecorder) {
        self.address = address
        self.port = channel.localAddress?.port ?? 0
        self.group = group
        self.channel = channel
        self.recorder = recorder
    }

    /// `http://localhost:PORT<path>`: the host libcurl must never resolve itself (pinning does it).
    package func url(_ path: String) -> String {
        "http://localhost:\(port)\(path)"
    }

    package func snapshot() async throws -> TestServerRecorder.Snapshot {
        try await recorder.loop.submit { [recorder] in recorder.snapshot }.get()
    }

    /// Waits for an event (not for time): fails after `timeout` if `condition` never held.
    package func waitUntil(
        _ what: String,
        timeout: TimeAmount = .seconds(10),
        _ condition: @escaping @Sendable (TestServerRecorder.Snapshot) -> Bool
    ) async throws {
        let promise = recorder.loop.makePromise(of: Void.self)
        recorder.loop.execute { [recorder] in
            recorder.addWaiter(what, timeout: timeout, promise: promise, condition: condition)
        }
        try await promise.futureResult.get()
    }

    package func stop() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

/// Runs `body` with a server on `address`, stopping it afterwards whatever happens.
package func withTestServer<T>(
    on address: String = "127.0.0.2",
    _ body: (TestHTTPServer) async throws -> T
) async throws -> T {
    let server = try await TestHTTPServer.start(on: address)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

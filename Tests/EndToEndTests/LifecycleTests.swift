import Foundation
import Glibc
import Testing
import TestSupport

/// Start-up and graceful shutdown of the proxy process.
@Suite("Lifecycle", .onBlockingThreads, .timeLimit(.minutes(1)))
struct LifecycleTests {
    @Test func startsAndListensOnBothPorts() throws {
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        #expect(proxy.port > 0 && proxy.adminPort > 0 && proxy.port != proxy.adminPort)
        _ = try RawClient(port: proxy.port)
        _ = try RawClient(port: proxy.adminPort)
        #expect(proxy.isRunning)
    }

    @Test func idleProxyExitsCleanlyOnSIGTERM() throws {
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        proxy.signal(SIGTERM)
        let status = proxy.waitForExit(timeout: .seconds(10))
        #expect(status == 0, "exit status \(String(describing: status)); \(proxy.diagnostics)")
        #expect(RawClient.connectionIsRejected(port: proxy.port))
    }

    /// A connection that has sent nothing (on the mixed port it waits for its first byte) is
    /// closed at SIGTERM, as an idle kept-alive one is, and does not hold the exit until the grace.
    @Test func aSilentConnectionIsClosedAtSIGTERM() throws {
        let proxy = try ProxyProcess.launch(["--shutdown-grace", "60s"])
        defer { proxy.stop() }
        let silent = try RawClient(port: proxy.port, timeout: .seconds(20))
        defer { silent.close() }
        #expect(try AccessControlTests.eventually { try AccessControlTests.accessStats(proxy)["openConnections"] as? Int == 1 })
        proxy.signal(SIGTERM)
        #expect(try silent.readToEOF(timeout: .seconds(15)).isEmpty, "closed without a byte")
        let status = proxy.waitForExit(timeout: .seconds(15))
        #expect(status == 0, "exit status \(String(describing: status)); \(proxy.diagnostics)")
    }

    @Test func sigtermDrainsInFlightDownloadThenExits() async throws {
        let size = 20 << 20
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(["--allow-destination", "127.0.0.0/8"])
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port, timeout: .seconds(20))
        try client.send("GET \(origin.url("/bytes/\(size)")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let head = try client.readHead()
        #expect(head.statusCode == 200, "\(head)\n\(proxy.diagnostics)")

        proxy.signal(SIGTERM)
        let body = try client.readBody(for: head)
        #expect(body.count == size)
        #expect(BytePattern.firstMismatch(in: body) == nil, "body corrupted during shutdown")

        #expect(RawClient.connectionIsRejected(port: proxy.port), "the proxy still accepts connections after SIGTERM")
        client.close()
        let status = proxy.waitForExit(timeout: .seconds(15))
        #expect(status == 0, "exit status \(String(describing: status)); \(proxy.diagnostics)")
    }
}

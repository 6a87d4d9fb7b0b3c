import Foundation
import Testing
import TestSupport

/// Checks the test support code itself (no proxy involved): curl and RawClient straight to the
/// in-process servers, and ProxyProcess against a tiny shell-script stand-in.
@Suite("Support self-tests", .onBlockingThreads, .timeLimit(.minutes(1)))
struct SupportSelfTests {
    @Test func helloDirect() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let response = try Curl.fetch(origin.url("/hello"), proxy: nil)
        #expect(response.exitCode == 0, "\(response.stderr)")
        #expect(response.status == 200)
        #expect(response.bodyText == "hello")
        #expect(response.header("X-Seen-Host") == origin.authority)
        #expect(response.header("X-Seen-Via") == "none")
        #expect(origin.connectionCount == 1)
        #expect(origin.requests().map(\.uri) == ["/hello"])
    }

    @Test(arguments: [false, true])
    func bytesDirect(chunked: Bool) async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let size = 1 << 20
        let response = try Curl.fetch(origin.url("/bytes/\(size)" + (chunked ? "?chunked=1" : "")), proxy: nil)
        #expect(response.status == 200, "\(response.stderr)")
        #expect(response.header("Transfer-Encoding") == (chunked ? "chunked" : nil))
        #expect(BytePattern.matches(response.body, count: size))
        #expect(TestOrigin.fnv(of: response.body) == TestOrigin.patternFNV(count: size))
    }

    @Test func digestDirect() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let body = Data(BytePattern.bytes(count: 1 << 20, offset: 7))
        let response = try Curl.fetch(
            origin.url("/digest"), proxy: nil, extra: ["-T", "-", "-H", "Transfer-Encoding: chunked", "-H", "Expect:"], stdin: body)
        let digest = try #require(TestOrigin.parseDigest(response.body), "\(response.bodyText)")
        #expect(digest == TestOrigin.Digest(
            bytes: body.count, fnv: TestOrigin.fnv(of: body), transferEncoding: "chunked", contentLength: "none"))
    }

    @Test func expectContinueDirect() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let body = Data(BytePattern.bytes(count: 10_000))
        let response = try Curl.fetch(
            origin.url("/expect"), proxy: nil,
            extra: ["--data-binary", "@-", "-H", "Expect: 100-continue", "--expect100-timeout", "20"], stdin: body)
        #expect(response.allHeads.contains("HTTP/1.1 100"))
        let digest = try #require(TestOrigin.parseDigest(response.body))
        #expect(digest.bytes == body.count && digest.fnv == TestOrigin.fnv(of: body) && digest.contentLength == "10000")
    }

    @Test func rawClientPipeliningAndKeepAlive() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let client = try RawClient(port: origin.port)
        let host = "Host: \(origin.authority)\r\n"
        try client.send("GET /bytes/1 HTTP/1.1\r\n\(host)\r\nGET /bytes/2?chunked=1 HTTP/1.1\r\n\(host)\r\nGET /hello HTTP/1.1\r\n\(host)\r\n")
        let first = try client.readResponse()
        let second = try client.readResponse()
        let third = try client.readResponse()
        #expect(first.body == [0])
        #expect(second.body == [0, 1])
        #expect(third.bodyText == "hello")
        // Many chunks, many reads: exercises the chunked parser across buffer refills.
        try client.send("GET /bytes/3000000?chunked=1 HTTP/1.1\r\n\(host)\r\n")
        let large = try client.readResponse()
        #expect(BytePattern.matches(large.body, count: 3_000_000))
        #expect(origin.connectionCount == 1)
    }

    @Test func closeDelimitedAndReset() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let client = try RawClient(port: origin.port)
        try client.send("GET /close-delimited/300000 HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.statusCode == 200)
        #expect(response.header("Content-Length") == nil && response.header("Transfer-Encoding") == nil)
        #expect(BytePattern.matches(response.body, count: 300_000))

        let reset = try RawClient(port: origin.port)
        try reset.send("GET /reset HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        #expect(try reset.readToEOF().isEmpty)
    }

    @Test func upgradeEchoDirect() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let client = try RawClient(port: origin.port)
        try client.send("GET /upgrade HTTP/1.1\r\nHost: \(origin.authority)\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\n")
        let head = try client.readHead()
        #expect(head.statusCode == 101)
        #expect(head.header("Upgrade") == "echo")
        try client.send("ping-123")
        #expect(try client.read(exactly: 8) == Array("ping-123".utf8))
        try client.send("second")
        #expect(try client.read(exactly: 6) == Array("second".utf8))
    }

    @Test func slowNeverAnswers() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let client = try RawClient(port: origin.port, timeout: .milliseconds(300))
        try client.send("GET /slow HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        #expect(throws: RawClient.Failure.self) { try client.readHead() }
    }

    @Test func echoServerHalfClose() async throws {
        let echo = try await TCPEchoServer.start()
        defer { echo.stop() }
        let client = try RawClient(port: echo.port)
        try client.send("abc")
        #expect(try client.read(exactly: 3) == Array("abc".utf8))
        try client.send("def")
        client.shutdownWrite()
        #expect(try client.readToEOF() == Array("def".utf8))
        #expect(await echo.waitForInputClosed(count: 1))
        #expect(echo.connectionCount == 1)
    }

    @Test(.enabled(if: Loopback.ipv6Available, "::1 cannot be bound on this host"))
    func ipv6Servers() async throws {
        let echo = try await TCPEchoServer.start(host: "::1")
        defer { echo.stop() }
        let client = try RawClient(host: "::1", port: echo.port)
        try client.send("v6")
        #expect(try client.read(exactly: 2) == Array("v6".utf8))
        let origin = try await TestOrigin.start(host: "::1")
        defer { origin.stop() }
        let response = try Curl.fetch(origin.url("/hello"), proxy: nil, extra: ["-g"])
        #expect(response.bodyText == "hello")
    }

    @Test func unusedPortIsRefused() async throws {
        let port = try Loopback.unusedPort(host: Loopback.deadHost)
        #expect(RawClient.connectionIsRejected(host: Loopback.deadHost, port: port))
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        #expect(!RawClient.connectionIsRejected(port: origin.port))
    }

    @Test func proxyProcessWithStandIn() throws {
        let script = """
            #!/bin/sh
            echo '{"level":"info","message":"proxy listening","address":"127.0.0.1:40123"}' >&2
            echo '{"level":"info","message":"admin listening","address":"[::1]:40124"}' >&2
            echo '{"type":"request","status":200,"host":"127.0.0.1","reused":true,"error":null}'
            echo "args: $*"
            trap 'kill $! 2>/dev/null; exit 0' TERM
            sleep 60 &
            wait
            """
        let binary = try Self.writeScript(script)
        defer { try? FileManager.default.removeItem(at: binary) }
        let proxy = try ProxyProcess(["--extra", "x"], binary: binary)
        try proxy.start()
        #expect(proxy.port == 40123)
        #expect(proxy.adminPort == 40124)
        let entry = try #require(proxy.waitForAccessLog(where: { $0.int("status") == 200 }))
        #expect(entry.string("host") == "127.0.0.1")
        #expect(entry.bool("reused") == true)
        #expect(entry.string("error") == nil)
        #expect(proxy.waitForExit(timeout: .milliseconds(50)) == nil)
        proxy.signal(SIGTERM)
        #expect(proxy.waitForExit(timeout: .seconds(10)) == 0)
        #expect(proxy.stdoutText().contains("args: --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --provider system --extra x"))
    }

    @Test func proxyProcessEarlyExitThrowsWithStderr() throws {
        let binary = try Self.writeScript("#!/bin/sh\necho 'bad flag --nope' >&2\nexit 3\n")
        defer { try? FileManager.default.removeItem(at: binary) }
        let proxy = try ProxyProcess(["--nope"], binary: binary)
        let error = #expect(throws: ProxyProcess.Failure.self) { try proxy.start() }
        #expect(error?.description.contains("status 3") == true)
        #expect(error?.description.contains("bad flag --nope") == true)
    }

    /// `Guarded.first(within:)`: a value already there is returned at once; a change made after the
    /// waiter checked wakes it (whichever comes first, the check or the change); a deadline already
    /// passed returns nil without suspending.
    @Test func guardedFirstWakesOnAChangeAndHonoursItsDeadline() async throws {
        let box = Guarded(0)
        #expect(await box.first(within: .seconds(10)) { $0 == 0 ? "now" : nil } == "now")
        async let seen = box.first(within: .seconds(30)) { $0 >= 3 ? $0 : nil }
        for _ in 0..<3 { box.withLock { $0 += 1 } }
        #expect(await seen == 3)
        #expect(await box.first(within: .zero) { $0 == 99 ? true : nil } == nil)
    }

    /// `shutdown()` returns once the listener is closed: a connection right after it is refused,
    /// where `stop()` (for `defer`) only starts the close.
    @Test func aServerShutDownRefusesConnections() async throws {
        let origin = try await TestOrigin.start()
        let echo = try await TCPEchoServer.start()
        let service = try await FakeHTTPDNSService.start()
        let dns = try await FakeDNSUpstream.start()
        let wire = try await WireOrigin.start()
        let servers: [(name: String, server: any TestServer, port: Int)] = [
            ("TestOrigin", origin, origin.port), ("TCPEchoServer", echo, echo.port), ("FakeHTTPDNSService", service, service.port),
            ("FakeDNSUpstream", dns, dns.port), ("WireOrigin", wire, wire.port),
        ]
        for (_, _, port) in servers {
            let client = try RawClient(port: port)
            client.close()
        }
        // Each port is tried right after its own shutdown (another test's bind to port 0 could be
        // given a port freed long enough ago).
        for (name, server, port) in servers {
            await server.shutdown()
            #expect(await Self.refusesSoon(port: port), "\(name) on port \(port) still accepts")
        }
    }

    /// Whether a connection to `port` is refused, tried again for a moment while it is not. A
    /// child process that another test is spawning holds a copy of every descriptor until its
    /// exec closes them (they are close-on-exec), so a listener closed here can go on accepting
    /// for that long; a listener that was never closed accepts for the whole deadline.
    static func refusesSoon(port: Int) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(3))
        while ContinuousClock.now < deadline {
            guard let client = try? RawClient(port: port) else { return true }
            client.close()
            await Task.yield()
        }
        return false
    }

    /// `OneThreadExecutor.run`: `prepare` and the body's synchronous stretches run on the one thread
    /// (what `NetworkNamespace.enter` relies on: setns holds for that thread only).
    @Test func oneThreadExecutorRunsPrepareAndBodyOnItsThread() async throws {
        let prepared = Guarded<pthread_t?>(nil)
        let (before, after) = try await OneThreadExecutor.run(name: "self-test", prepare: {
            prepared.withLock { $0 = pthread_self() }
        }) { () async throws -> (pthread_t, pthread_t) in
            let before = pthread_self()
            try await Task.sleep(for: .zero)  // a suspension: the body comes back to the same thread
            return (before, pthread_self())
        }
        let thread = try #require(prepared.withLock { $0 })
        #expect(pthread_equal(thread, before) != 0 && pthread_equal(thread, after) != 0)
    }

    /// Written through a descriptor opened with O_CLOEXEC (Foundation's atomic write leaves its
    /// descriptor to children that other tests spawn meanwhile, and exec then fails with ETXTBSY
    /// while any of them lives).
    private static func writeScript(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-standin-\(UUID().uuidString).sh")
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw ChildProcess.Failure(description: "cannot create \(url.path): \(String(cString: strerror(errno)))") }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == bytes.count else { throw ChildProcess.Failure(description: "cannot write \(url.path)") }
        return url
    }
}

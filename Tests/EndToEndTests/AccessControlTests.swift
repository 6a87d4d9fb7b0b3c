import Foundation
import Glibc
import Testing
import TestSupport

/// Closed by default: proxy authentication, the client ACL and connection limits, through the real
/// binary with curl and raw sockets.
@Suite("Access control and limits", .onBlockingThreads, .timeLimit(.minutes(2)))
struct AccessControlTests {
    static let allowLoopback = ["--allow-destination", "127.0.0.0/8"]

    // MARK: proxy authentication

    @Test func basicAuthWithCurl407ThenRightCredentialsForGetAndConnect() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(
            Self.allowLoopback + ["--connect-ports", String(origin.port), "--proxy-auth", "alice:s3cret-pw"])
        defer { proxy.stop() }

        let none = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL)
        #expect(none.status == 407, proxy.diagnostics)
        #expect(none.header("proxy-authenticate") == "Basic realm=\"httpdns-proxy\", charset=\"UTF-8\"")
        #expect(none.bodyText.contains("proxy authentication required"))
        #expect(origin.requests().isEmpty, "nothing may reach the origin before authentication")

        let good = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["--proxy-user", "alice:s3cret-pw"])
        #expect(good.status == 200 && good.bodyText == "hello", "\(good.stderr)\n\(proxy.diagnostics)")
        let seen = try #require(origin.requests().last)
        #expect(seen.headers["proxy-authorization"].isEmpty, "credentials must never reach the origin")

        let wrong = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-U", "alice:not-it"])
        #expect(wrong.status == 407)
        #expect(wrong.bodyText.contains("alice") && !wrong.bodyText.contains("not-it"))

        // CONNECT: the tunnel opens only with the right credentials.
        let tunnel = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-p", "-U", "alice:s3cret-pw"])
        #expect(tunnel.status == 200 && tunnel.bodyText == "hello", "\(tunnel.stderr)\n\(proxy.diagnostics)")
        #expect(tunnel.allHeads.hasPrefix("HTTP/1.1 200"), "\(tunnel.allHeads)")
        let refusedTunnel = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-p", "-U", "alice:nope"])
        #expect(refusedTunnel.exitCode != 0)
        #expect(refusedTunnel.allHeads.hasPrefix("HTTP/1.1 407"), "\(refusedTunnel.allHeads)")
        #expect(origin.requests().count == 2, "the refused tunnel reached nothing")

        func failures() -> [[String: Any]] { proxy.logEntries().filter { $0["message"] as? String == "proxy authentication failed" } }
        // Log lines arrive through a pipe: wait for both.
        #expect(try Self.eventually { failures().count == 2 }, proxy.diagnostics)
        let failures = failures()
        #expect(failures.allSatisfy { $0["user"] as? String == "alice" && $0["reason"] as? String == "wrong password" })
        let everything = proxy.stderrText() + proxy.stdoutText()
        #expect(!everything.contains("s3cret-pw") && !everything.contains("not-it") && !everything.contains("nope"),
                "a password reached the logs")
        let logged = proxy.waitForAccessLog(where: { $0.int("status") == 200 && $0.string("type") == "tunnel" })
        #expect(logged?.string("user") == "alice", "\(String(describing: logged))")
        let access = try Self.accessStats(proxy)
        #expect(access["authSuccesses"] as? Int == 2 && access["authFailures"] as? Int == 2, "\(access)")
    }

    /// `/stats` → `access` from the admin listener.
    static func accessStats(_ proxy: ProxyProcess) throws -> [String: Any] {
        let stats = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil)
        let json = try JSONSerialization.jsonObject(with: stats.body) as? [String: Any]
        return try #require(json?["access"] as? [String: Any], "no access section: \(stats.bodyText)")
    }

    @Test func the407KeepsTheConnectionForTheRetry() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback + ["--proxy-auth", "alice:pw", "--proxy-auth-realm", "corp proxy"])
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        try client.send("GET \(origin.url("/hello")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let refused = try client.readResponse()
        #expect(refused.statusCode == 407)
        #expect(refused.header("proxy-authenticate") == "Basic realm=\"corp proxy\", charset=\"UTF-8\"")
        #expect(refused.header("connection") == "keep-alive")
        // "alice:pw"
        try client.send("GET \(origin.url("/hello")) HTTP/1.1\r\nHost: \(origin.authority)\r\nProxy-Authorization: Basic YWxpY2U6cHc=\r\n\r\n")
        let served = try client.readResponse()
        #expect(served.statusCode == 200 && served.bodyText == "hello", proxy.diagnostics)

        // A refused request with a body is answered and the connection closes (the body is not read).
        try client.send("POST \(origin.url("/digest")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Length: 5\r\n\r\nhello")
        let refusedPost = try client.readResponse(requestMethod: "POST")
        #expect(refusedPost.statusCode == 407 && refusedPost.header("connection") == "close")
        #expect(try client.readToEOF().isEmpty)
        #expect(origin.requests().count == 1)
    }

    /// Chromium and Java answer a 407 to CONNECT by retrying on the same connection: it stays open
    /// when nothing followed the CONNECT's head; bytes sent ahead of the answer close it.
    @Test func aRefusedConnectKeepsTheConnectionForTheRetryUnlessBytesFollowed() async throws {
        let echo = try await TCPEchoServer.start()
        defer { echo.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback + ["--connect-ports", String(echo.port), "--proxy-auth", "alice:pw"])
        defer { proxy.stop() }
        let connect = "CONNECT \(echo.authority) HTTP/1.1\r\nHost: \(echo.authority)\r\n"
        let client = try RawClient(port: proxy.port)
        try client.send(connect + "\r\n")
        let refused = try client.readResponse(requestMethod: "CONNECT")
        #expect(refused.statusCode == 407, proxy.diagnostics)
        #expect(refused.header("connection") == "keep-alive")
        // "alice:pw"
        try client.send(connect + "Proxy-Authorization: Basic YWxpY2U6cHc=\r\n\r\n")
        let established = try client.readHead()
        #expect(established.statusCode == 200, "\(established)\n\(proxy.diagnostics)")
        #expect(established.leftover.isEmpty)
        try client.send("through the tunnel")
        #expect(String(decoding: try client.read(exactly: 18), as: UTF8.self) == "through the tunnel")
        #expect(echo.connectionCount == 1)

        // Bytes right behind the CONNECT head (a client that did not wait): 407, then the close.
        let eager = try RawClient(port: proxy.port)
        try eager.send(connect + "\r\n\u{16}\u{03}\u{01}\u{00}\u{05}hello")
        let closing = try eager.readResponse(requestMethod: "CONNECT")
        #expect(closing.statusCode == 407 && closing.header("connection") == "close")
        #expect(try eager.readToEOF().isEmpty, "nothing more is answered")
        #expect(echo.connectionCount == 1, "the refused tunnel reached nothing")
    }

    @Test func htpasswdWithShaCryptAndBcryptHashesMadeNow() async throws {
        let shaCrypt = try Tools.output("openssl", ["passwd", "-5", "five-pw"])
        let bcrypt = try Tools.bcryptHash("bee-pw")
        #expect(shaCrypt.hasPrefix("$5$") && bcrypt.hasPrefix("$2y$"))
        let file = try Tools.tempFile("# made by the test\nfive:\(shaCrypt)\nbee:\(bcrypt)\n")
        defer { unlink(file) }
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback + ["--proxy-auth", "@\(file)"])
        defer { proxy.stop() }
        for (user, password, status) in [("five", "five-pw", 200), ("bee", "bee-pw", 200), ("bee", "bee-pw", 200),
                                         ("bee", "five-pw", 407), ("five", "bee-pw", 407), ("nobody", "x", 407)] {
            let response = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-U", "\(user):\(password)"])
            #expect(response.status == status, "\(user): \(response.stderr)\n\(proxy.diagnostics)")
        }
        func reasons() -> [String] {
            proxy.logEntries().filter { $0["message"] as? String == "proxy authentication failed" }.compactMap { $0["reason"] as? String }
        }
        _ = try Self.eventually { reasons().count == 3 }
        #expect(reasons() == ["wrong password", "wrong password", "unknown user"])
    }

    @Test func plaintextOrLegacyHtpasswdStopsTheStart() throws {
        let five = try Tools.output("openssl", ["passwd", "-5", "ok"])
        for (text, line, reason) in [("ok:\(five)\nplain:hunter2-pw\n", 2, "plain-text"), ("md5:$apr1$salt$abcdefghijklmnopqrstu0\n", 1, "unsupported")] {
            let file = try Tools.tempFile(text)
            defer { unlink(file) }
            let proxy = try ProxyProcess(["--proxy-auth", "@\(file)"])
            do {
                try proxy.start(timeout: .seconds(10))
                Issue.record("the proxy started with \(text)")
            } catch {
                let message = "\(error)"
                #expect(message.contains("htpasswd file \(file), line \(line):") && message.contains(reason), "\(message)")
                #expect(!message.contains("hunter2-pw"), "the line's content must not be echoed")
            }
            proxy.stop()
        }
    }

    // MARK: client ACL

    @Test func clientOutsideTheACLGets403BeforeAnythingIsRead() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        // An HTTP-only port (on the mixed port the refusal waits for the first byte: MixedPortTests).
        let proxy = try ProxyProcess.launch(Self.allowLoopback + ["--allow-client", "127.0.0.2/32", "--listen-socks", "false"])
        defer { proxy.stop() }

        // Nothing sent at all: the answer comes anyway, and the connection closes.
        let silent = try RawClient(port: proxy.port)
        let head = try silent.readHead()
        #expect(head.statusCode == 403)
        #expect(head.header("connection") == "close")
        let body = String(decoding: try silent.readToEOF(), as: UTF8.self)
        #expect(body.contains("client 127.0.0.1 is not allowed") && body.contains("--allow-client"), "\(body)")

        let refused = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL)
        #expect(refused.status == 403)
        #expect(origin.requests().isEmpty)
        let allowed = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["--interface", "127.0.0.2"])
        #expect(allowed.status == 200 && allowed.bodyText == "hello", "\(allowed.stderr)\n\(proxy.diagnostics)")
        let line = proxy.waitForLog(where: { $0["message"] as? String == "client connection refused" })
        #expect(line?["reason"] as? String == "client_not_allowed", proxy.diagnostics)
        let access = try Self.accessStats(proxy)
        #expect(access["rejectedByACL"] as? Int == 2 && access["authFailures"] == nil, "\(access)")
        // Refused connections are counted as refusals, not as requests.
        let metrics = MetricsTests.samples(try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/metrics", proxy: nil).bodyText)
        #expect(metrics["httpdns_proxy_client_connections_rejected_total{reason=\"client_not_allowed\"}"] == 2)
        #expect(metrics["httpdns_proxy_requests_total{kind=\"http\",code_class=\"4xx\"}"] == 0)
        #expect(metrics["httpdns_proxy_requests_total{kind=\"http\",code_class=\"2xx\"}"] == 1)
    }

    // MARK: connection limits

    @Test func perClientAndTotalLimitsAnswer503AndRecover() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        // Loopback clients are held to the total only (the per-client limit, for other clients, is
        // checked from a network namespace in PressureTests).
        for (flag, named) in [("--max-connections", "(--max-connections)")] {
            // The third client reads without sending: an HTTP-only port answers it at accept.
            let proxy = try ProxyProcess.launch(Self.allowLoopback + [flag, "2", "--listen-socks", "false"])
            defer { proxy.stop() }
            var held = [try RawClient(port: proxy.port), try RawClient(port: proxy.port)]
            // Make sure both are accepted before the third connects.
            for client in held {
                try client.send("GET \(origin.url("/hello")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
                #expect(try client.readResponse().statusCode == 200)
            }
            let third = try RawClient(port: proxy.port)
            let refused = try third.readResponse()
            #expect(refused.statusCode == 503, "\(flag)")
            #expect(refused.header("retry-after") == "2")
            #expect(refused.bodyText.contains(named), "\(refused.bodyText)")
            #expect(try third.readToEOF().isEmpty)
            #expect(try Self.accessStats(proxy)["rejectedByLimits"] as? Int == 1)

            held.removeFirst().close()
            // The freed place is taken again once the proxy saw the close.
            let served = try Self.eventually {
                let client = try RawClient(port: proxy.port)
                try client.send("GET \(origin.url("/hello")) HTTP/1.1\r\nHost: \(origin.authority)\r\nConnection: close\r\n\r\n")
                return try client.readResponse().statusCode == 200
            }
            #expect(served, proxy.diagnostics)
        }
    }

    // MARK: bounded read-ahead (pipelining: PressureTests)

    @Test func oversizedTrailersNeverReachTheOrigin() async throws {
        let origin = try await WireOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(Self.allowLoopback)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        let trailers = (0..<300).map { "X-T\($0): v\r\n" }.joined()
        try client.send("POST http://\(origin.authority)/t HTTP/1.1\r\nHost: \(origin.authority)\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5\r\nhello\r\n0\r\n" + trailers + "\r\n")
        let response = try client.readResponse(requestMethod: "POST")
        #expect(response.statusCode == 431, "\(response.statusCode) \(response.bodyText)")
        #expect(try client.readToEOF().isEmpty)
        let received = String(decoding: origin.allReceived, as: UTF8.self)
        #expect(!received.contains("0\r\n\r\n") && !received.contains("X-T1"), "the message must not be completed upstream: \(received)")
    }

    /// Retries `attempt` for up to 10 s (a close or a freed descriptor is noticed asynchronously).
    static func eventually(_ attempt: () throws -> Bool) throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if (try? attempt()) == true { return true }
            var pause = timespec(tv_sec: 0, tv_nsec: 50_000_000)
            nanosleep(&pause, nil)
        }
        return try attempt()
    }
}

/// Real password hashes made at test time with the tools users would use.
enum Tools {
    struct Missing: Error, CustomStringConvertible {
        var description: String
    }

    /// `tool`'s trimmed standard output; throws when it is missing or fails.
    static func output(_ tool: String, _ arguments: [String], stdin: String? = nil) throws -> String {
        guard let path = ChildEnvironment.which(tool) else { throw Missing(description: "\(tool) is required for this test") }
        let result = try ExternalTool.run(path, arguments, timeout: .seconds(30), stdin: stdin)
        guard result.exitCode == 0 else {
            throw Missing(description: "\(tool) \(arguments.joined(separator: " ")) failed with \(result.exitCode): \(result.stderr)")
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A `$2y$` bcrypt hash from Python's bcrypt (installed by scripts/ensure-deps.sh
    /// --with-test-tools) or from `htpasswd -B`.
    static func bcryptHash(_ password: String) throws -> String {
        if let hash = try? output("python3", ["-c", "import bcrypt,sys; print(bcrypt.hashpw(sys.stdin.read().encode(), bcrypt.gensalt(rounds=8, prefix=b'2b')).decode().replace('$2b$', '$2y$', 1))"], stdin: password) {
            return hash
        }
        if let line = try? output("htpasswd", ["-nbB", "-C", "8", "u", password]), let colon = line.firstIndex(of: ":") {
            return String(line[line.index(after: colon)...])
        }
        throw Missing(description: "a bcrypt hash needs Python's bcrypt (pip install bcrypt) or htpasswd (apt-get install apache2-utils)")
    }

    static func tempFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-\(UUID().uuidString).htpasswd").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

import Foundation
import Glibc
import Testing
import TestSupport

/// `--access-log-format combined|squid`, and the JSON line's `user_agent` and `request_id`
/// (sent to the origin with `--request-id-header`), through the binary with curl.
@Suite("Access log formats", .onBlockingThreads, .timeLimit(.minutes(2)))
struct AccessLogFormatTests {
    /// Waits until the access log has `count` lines (stdout).
    static func lines(_ proxy: ProxyProcess, count: Int) throws -> [String] {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            let lines = proxy.stdoutText().split(separator: "\n").map(String.init)
            if lines.count >= count { return lines }
            var pause = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            nanosleep(&pause, nil)
        }
        return proxy.stdoutText().split(separator: "\n").map(String.init)
    }

    @Test func combinedIsWhatNginxWritesAndEscapesClientBytes() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(AccessControlTests.allowLoopback + ["--access-log-format", "combined"])
        defer { proxy.stop() }
        _ = try Curl.fetch(origin.url("/hello?token=secret"), proxy: proxy.proxyURL, extra: ["-A", "agent \"x\" \\ é"])
        _ = try Curl.fetch("http://127.0.0.1:\(try Loopback.unusedPort())/gone", proxy: proxy.proxyURL, extra: ["-0"])
        let lines = try Self.lines(proxy, count: 2)
        try #require(lines.count == 2, "\(lines)")
        // The regular expression log tools use for nginx's combined format.
        let combined = try NSRegularExpression(
            pattern: #"^(\S+) - (\S+) \[(\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} \+0000)\] "([^"]*)" (\d{3}) (\d+) "([^"]*)" "([^"]*)" "([^"]*)"$"#)
        var fields: [[String]] = []
        for line in lines {
            let range = NSRange(line.startIndex..., in: line)
            let match = try #require(combined.firstMatch(in: line, range: range), "not combined: \(line)")
            fields.append((1..<match.numberOfRanges).map { String(line[Range(match.range(at: $0), in: line)!]) })
        }
        #expect(fields[0][0] == "127.0.0.1" && fields[0][1] == "-")
        #expect(fields[0][3] == "GET \(origin.url("/hello")) HTTP/1.1", "no query in the log: \(fields[0][3])")
        #expect(fields[0][4] == "200" && fields[0][5] == "5" && fields[0][6] == "-")
        #expect(fields[0][7] == #"agent \x22x\x22 \x5c \xc3\xa9"#, "\(fields[0][7])")
        #expect(fields[1][3].hasSuffix(" HTTP/1.0") && fields[1][4] == "502", "\(fields[1])")
        #expect(!proxy.stdoutText().contains("secret"))
    }

    @Test func squidNativeHasItsTenFieldsAndTheRequestID() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let echo = try await TCPEchoServer.start()
        defer { echo.stop() }
        let proxy = try ProxyProcess.launch(
            AccessControlTests.allowLoopback + ["--access-log-format", "squid", "--connect-ports", "\(echo.port)", "--proxy-auth", "alice:pw"])
        defer { proxy.stop() }
        _ = try Curl.fetch(origin.url("/bytes/100"), proxy: proxy.proxyURL, extra: ["--proxy-user", "alice:pw"])
        _ = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL)  // no credentials: 407
        let tunnel = try RawClient(port: proxy.port)
        try tunnel.send("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: 127.0.0.1:\(echo.port)\r\nProxy-Authorization: Basic YWxpY2U6cHc=\r\n\r\n")
        #expect(try tunnel.readHead().statusCode == 200)
        try tunnel.send("ping")
        _ = try tunnel.read(exactly: 4)
        tunnel.close()
        let lines = try Self.lines(proxy, count: 3)
        try #require(lines.count == 3, "\(lines)")
        let rows = lines.map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        for row in rows { #expect(row.count == 11, "\(row)") }
        let time = try #require(Double(rows[0][0]))
        #expect(abs(time - Date().timeIntervalSince1970) < 60 && rows[0][0].split(separator: ".").last?.count == 3)
        #expect(Int(rows[0][1]) != nil && rows[0][2] == "127.0.0.1")
        #expect(rows[0][3] == "TCP_MISS/200" && rows[0][4] == "100" && rows[0][5] == "GET")
        #expect(rows[0][6] == origin.url("/bytes/100") && rows[0][7] == "alice" && rows[0][8] == "HIER_DIRECT/127.0.0.1" && rows[0][9] == "-")
        #expect(rows.allSatisfy { $0.last?.wholeMatch(of: /[0-9a-f]{16}-[0-9]+/) != nil }, "\(rows)")
        #expect(rows[1][3] == "TCP_DENIED/407" && rows[1][7] == "-" && rows[1][8] == "HIER_NONE/-", "\(rows[1])")
        #expect(rows[2][3] == "TCP_TUNNEL/200" && rows[2][5] == "CONNECT" && rows[2][6] == "127.0.0.1:\(echo.port)", "\(rows[2])")
    }

    /// The request line as the client sent it (nginx's `$request`, the query cut off), also for
    /// requests refused before their target was understood: an origin-form request (400) and one
    /// without credentials (407).
    @Test func refusedRequestsKeepTheirRequestLine() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        for format in ["combined", "squid"] {
            let proxy = try ProxyProcess.launch(
                AccessControlTests.allowLoopback + ["--access-log-format", format, "--proxy-auth", "alice:pw"])
            defer { proxy.stop() }
            let originForm = try RawClient(port: proxy.port)
            try originForm.send("GET /p?token=secret HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: Basic YWxpY2U6cHc=\r\n\r\n")
            #expect(try originForm.readHead().statusCode == 400)
            originForm.close()
            let noCredentials = try RawClient(port: proxy.port)
            try noCredentials.send("GET \(origin.url("/noauth?token=secret")) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(try noCredentials.readHead().statusCode == 407)
            noCredentials.close()
            // Two connections, maybe two event loops: their lines may come in either order.
            let all = try Self.lines(proxy, count: 2)
            let isBadRequest = { (line: String) in line.contains("\" 400 ") || line.contains("/400 ") }
            let lines = all.filter(isBadRequest) + all.filter { !isBadRequest($0) }
            try #require(lines.count == 2, "\(lines)")
            if format == "combined" {
                #expect(lines[0].contains(#" "GET /p HTTP/1.1" 400 "#), "\(lines[0])")
                #expect(lines[1].contains(#" "GET \#(origin.url("/noauth")) HTTP/1.0" 407 "#), "\(lines[1])")
            } else {
                let rows = lines.map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
                #expect(rows[0].count > 6 && rows[0][5] == "GET" && rows[0][6] == "/p", "\(lines[0])")
                #expect(rows[1].count > 6 && rows[1][3] == "TCP_DENIED/407" && rows[1][6] == origin.url("/noauth"), "\(lines[1])")
            }
            #expect(!proxy.stdoutText().contains("secret"))
        }
    }

    @Test func everyRequestHasAnIDAndTheOriginSeesIt() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(AccessControlTests.allowLoopback + ["--request-id-header", "X-Request-Id"])
        defer { proxy.stop() }
        // Two requests on one connection, a client's own valid id, and one that is not an id.
        _ = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: [origin.url("/hello")])
        _ = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-H", "X-Request-Id: 0af7651916cd43dd8448eb211c80319c"])
        _ = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-H", "X-Request-Id: not an id; drop table"])
        let entries = try #require(proxy.waitForAccessLogs(count: 4, where: { _ in true }), proxy.diagnostics)
        let ids = entries.map { $0.string("request_id") ?? "" }
        let seen = origin.requests().map { $0.headers["x-request-id"] }
        #expect(seen.allSatisfy { $0.count == 1 }, "exactly one field upstream: \(seen)")
        #expect(seen.map { $0.first ?? "" } == ids, "the origin sees the logged id: \(seen) \(ids)")
        #expect(Set(ids).count == 4, "\(ids)")
        #expect(ids[0].wholeMatch(of: /[0-9a-f]{16}-1/) != nil && ids[1] == ids[0].dropLast() + "2", "same connection, next number: \(ids)")
        #expect(ids[2] == "0af7651916cd43dd8448eb211c80319c")
        #expect(ids[3] != "not an id; drop table" && ids[3].wholeMatch(of: /[0-9a-f]{16}-1/) != nil)
        #expect(entries.allSatisfy { $0.string("user_agent")?.hasPrefix("curl/") == true })
    }

    /// The request id is the last field of the combined and squid lines, and with
    /// `--request-id-header` the client gets it back in that field: on forwarded answers and on the
    /// proxy's own (a 407, a 502).
    @Test func theRequestIDIsInEveryFormatAndReturnedToTheClient() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        for format in ["combined", "squid"] {
            let proxy = try ProxyProcess.launch(
                AccessControlTests.allowLoopback + ["--access-log-format", format, "--request-id-header", "X-Request-Id"])
            defer { proxy.stop() }
            let forwarded = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL)
            let ownID = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-H", "X-Request-Id: 0af7651916cd43dd"])
            let failed = try Curl.fetch("http://127.0.0.1:\(try Loopback.unusedPort())/gone", proxy: proxy.proxyURL)
            #expect(forwarded.status == 200 && ownID.status == 200 && failed.status == 502)
            // Three connections, maybe three event loops: the lines may come in any order.
            let all = try Self.lines(proxy, count: 3)
            try #require(all.count == 3, "\(all)")
            let logged = all.map { line in
                String(line.split(separator: " ").last ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
            let returned = [forwarded, ownID, failed].map { $0.head?.values("x-request-id") ?? [] }
            #expect(returned.map(\.count) == [1, 1, 1], "exactly one field back: \(returned)")
            let lines = returned.map { id in all.first { $0.hasSuffix(" \(id.first ?? "?")") || $0.hasSuffix(" \"\(id.first ?? "?")\"") } ?? "" }
            #expect(Set(returned.map { $0.first ?? "" }) == Set(logged), "\(format): the client gets the logged id: \(returned) \(all)")
            let statuses = format == "combined" ? ["\" 200 ", "\" 200 ", "\" 502 "] : ["/200 ", "/200 ", "/502 "]
            #expect(zip(lines, statuses).allSatisfy { $0.contains($1) }, "each id is its own request's: \(returned) \(all)")
            #expect(returned[0].first?.wholeMatch(of: /[0-9a-f]{16}-1/) != nil && returned[1] == ["0af7651916cd43dd"], "\(returned)")
            if format == "combined" {
                #expect(lines[0].wholeMatch(of: /.* "curl\/[^"]*" "[0-9a-f]{16}-1"/) != nil, "one more quoted field after the User-Agent: \(lines[0])")
            } else {
                #expect(lines.allSatisfy { $0.split(separator: " ").count == 11 }, "\(lines)")
            }
        }
        let proxy = try ProxyProcess.launch(
            AccessControlTests.allowLoopback + ["--access-log-format", "combined", "--request-id-header", "X-Request-Id", "--proxy-auth", "alice:pw"])
        defer { proxy.stop() }
        let refused = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL)
        #expect(refused.status == 407)
        let line = try #require(try Self.lines(proxy, count: 1).first)
        let id = try #require(refused.header("x-request-id"), "the 407 carries the id: \(refused.allHeads)")
        #expect(line.hasSuffix(" \"\(id)\""), "\(line)")
    }

    @Test func withoutTheHeaderOptionNoIDGoesBack() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(AccessControlTests.allowLoopback + ["--access-log-format", "combined"])
        defer { proxy.stop() }
        let response = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL)
        #expect(response.status == 200 && response.header("x-request-id") == nil)
        let line = try #require(try Self.lines(proxy, count: 1).first)
        #expect(line.wholeMatch(of: /.* "curl\/[^"]*" "[0-9a-f]{16}-1"/) != nil, "the id is logged all the same: \(line)")
    }

    /// `--access-log-referer`: the Referer as sent, in every format, for forwarded and refused
    /// requests alike; without it no format shows it.
    @Test func theRefererIsLoggedOnlyWhenAskedFor() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let referer = "http://127.0.0.1/page?session=s3cret \"q\" é"
        for format in ["json", "combined", "squid"] {
            for enabled in [true, false] {
                let proxy = try ProxyProcess.launch(
                    AccessControlTests.allowLoopback + ["--access-log-format", format, "--access-log-referer", "\(enabled)"])
                defer { proxy.stop() }
                _ = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-e", referer])
                let lines = try Self.lines(proxy, count: 1)
                try #require(lines.count == 1, "\(lines)")
                let line = lines[0]
                guard enabled else {
                    #expect(!line.contains("s3cret") && !line.contains("referer"), "\(format): \(line)")
                    continue
                }
                switch format {
                case "json":
                    let entry = try #require(proxy.waitForAccessLog(where: { _ in true }))
                    #expect(entry.string("referer") == referer, "\(line)")
                case "combined":
                    #expect(line.contains(#" "http://127.0.0.1/page?session=s3cret \x22q\x22 \xc3\xa9" "curl/"#), "\(line)")
                default:
                    let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                    #expect(fields.count == 12 && fields[11] == #"http://127.0.0.1/page?session=s3cret\x20\x22q\x22\x20\xc3\xa9"#, "\(line)")
                }
            }
        }
        // A refused request's Referer too.
        let proxy = try ProxyProcess.launch(
            AccessControlTests.allowLoopback + ["--access-log-format", "combined", "--access-log-referer", "yes", "--proxy-auth", "alice:pw"])
        defer { proxy.stop() }
        #expect(try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-e", "http://127.0.0.1/from"]).status == 407)
        let line = try #require(try Self.lines(proxy, count: 1).first)
        #expect(line.contains(#" 407 77 "http://127.0.0.1/from" "#), "\(line)")
    }

    @Test func withoutTheHeaderOptionTheIDIsOnlyLogged() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let proxy = try ProxyProcess.launch(AccessControlTests.allowLoopback)
        defer { proxy.stop() }
        _ = try Curl.fetch(origin.url("/hello"), proxy: proxy.proxyURL, extra: ["-H", "X-Request-Id: abc"])
        let entry = try #require(proxy.waitForAccessLog(where: { _ in true }))
        #expect(entry.string("request_id")?.wholeMatch(of: /[0-9a-f]{16}-1/) != nil)
        #expect(origin.requests().last?.headers["x-request-id"] == ["abc"], "a field the proxy does not own passes untouched")
    }
}

import CurlTransport
import Testing
import TestSupport

@Suite("CurlTransport requests against a loopback server")
struct CurlTransportRequestTests {
    @Test("GET pinned to the server's address reaches it, keeping the URL's Host")
    func pinnedGet() async throws {
        try await withTestServer(on: "127.0.0.2") { server in
            try await withTransport { transport in
                let response = try await transport.send(request(server, "/ok"))
                #expect(response.status == 200)
                #expect(response.body == Array("ok".utf8))
                #expect(response.remoteIP == "127.0.0.2")
                #expect(response.header("x-test-server") == "1")
                #expect(response.reusedConnection == false)
                #expect(response.totalTime > .zero)

                let seen = try await server.snapshot().requests
                #expect(seen.count == 1)
                #expect(seen.first?.head.headers["Host"] == ["localhost:\(server.port)"])
                #expect(seen.first?.head.headers["User-Agent"] == ["httpdns-proxy"])
            }
        }
    }

    @Test("pinning applies to a host spelled in mixed case")
    func mixedCaseHostIsPinned() async throws {
        try await withTestServer(on: "127.0.0.2") { server in
            try await withTransport { transport in
                var mixed = request(server, "/ok")
                mixed.url = "http://LocalHost:\(server.port)/ok"
                let response = try await transport.send(mixed)
                #expect(response.remoteIP == "127.0.0.2")
            }
        }
    }

    @Test("a non-2xx status is a response, not an error")
    func notFoundIsAResponse() async throws {
        try await withTestServer { server in
            try await withTransport { transport in
                let response = try await transport.send(request(server, "/missing"))
                #expect(response.status == 404)
                #expect(response.body == Array("not found".utf8))
            }
        }
    }

    @Test("a dead first pin fails over to the next one")
    func failoverWithinPinList() async throws {
        try await withTestServer(on: "127.0.0.2") { server in
            try await withTransport { transport in
                let response = try await transport.send(request(server, "/ok", pinnedTo: [deadAddress, "127.0.0.2"]))
                #expect(response.status == 200)
                #expect(response.remoteIP == "127.0.0.2")
            }
        }
    }

    @Test("all pins dead is connectFailed")
    func allPinsDead() async throws {
        try await withTestServer { server in
            try await withTransport { transport in
                let error = await transportError {
                    try await transport.send(request(server, "/ok", pinnedTo: [deadAddress, "127.0.0.67"]))
                }
                #expect(error?.kind == .connectFailed)
                #expect(error?.isConnectFailure == true)
                #expect(error?.shortDescription == "connect_failed")
                let accepted = try await server.snapshot().acceptedConnections
                #expect(accepted == 0)
            }
        }
    }

    @Test("a server that never answers hits the request timeout")
    func timeout() async throws {
        try await withTestServer { server in
            try await withTransport { transport in
                let clock = ContinuousClock()
                let started = clock.now
                let error = await transportError {
                    try await transport.send(request(server, "/never", timeout: .milliseconds(300)))
                }
                let elapsed = clock.now - started
                #expect(error?.kind == .timeout)
                #expect(error?.isTimeout == true)
                #expect(error?.shortDescription == "timeout")
                #expect(elapsed >= .milliseconds(250))
            }
        }
    }

    @Test("sequential requests reuse one connection")
    func connectionReuse() async throws {
        try await withTestServer { server in
            try await withTransport { transport in
                var reused: [Bool] = []
                for _ in 0..<5 {
                    let response = try await transport.send(request(server, "/ok"))
                    #expect(response.status == 200)
                    reused.append(response.reusedConnection)
                }
                #expect(reused == [false, true, true, true, true])
                #expect(try await server.snapshot().acceptedConnections == 1)
            }
        }
    }

    @Test("50 concurrent requests all succeed within the connection limit")
    func concurrentRequests() async throws {
        try await withTestServer { server in
            try await withTransport(maxConnections: 8) { transport in
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<50 {
                        group.addTask {
                            var echo = request(server, "/echo")
                            echo.method = .post
                            echo.body = Array("request \(index)".utf8)
                            let response = try await transport.send(echo)
                            #expect(response.body == Array("request \(index)".utf8))
                            return response.status
                        }
                    }
                    var statuses: [Int] = []
                    for try await status in group {
                        statuses.append(status)
                    }
                    return statuses
                }
                #expect(statuses.count == 50)
                #expect(statuses.allSatisfy { $0 == 200 })
                let snapshot = try await server.snapshot()
                #expect(snapshot.requests.count == 50)
                #expect(snapshot.acceptedConnections <= 8)
            }
        }
    }

    @Test("bodies beyond maxResponseBytes fail with tooLarge", arguments: ["/big", "/chunked"])
    func tooLarge(route: String) async throws {
        try await withTestServer { server in
            try await withTransport { transport in
                var big = request(server, "\(route)?bytes=\(2 << 20)")
                big.maxResponseBytes = 1 << 20
                let error = await transportError { try await transport.send(big) }
                #expect(error?.kind == .tooLarge)
                #expect(error?.shortDescription == "too_large")

                // Within the limit the same route is fine.
                var small = request(server, "\(route)?bytes=\(1 << 20)")
                small.maxResponseBytes = 1 << 20
                let response = try await transport.send(small)
                #expect(response.body.count == 1 << 20)
            }
        }
    }

    @Test("POST body and Content-Type arrive intact")
    func postEcho() async throws {
        try await withTestServer { server in
            try await withTransport { transport in
                // Binary (NUL and high bytes), and over 1 KiB, where libcurl would add "Expect: 100-continue".
                let body = (0..<4096).map { UInt8(truncatingIfNeeded: $0 * 7) }
                var post = request(server, "/echo")
                post.method = .post
                post.body = body
                post.headers = [(name: "Content-Type", value: "application/dns-message"), (name: "X-Extra", value: "")]
                let response = try await transport.send(post)
                #expect(response.status == 200)
                #expect(response.body == body)
                #expect(response.header("Content-Type") == "application/dns-message")
                #expect(response.header("X-Echo-Method") == "POST")

                let seen = try #require(try await server.snapshot().requests.first)
                #expect(seen.head.method == .POST)
                #expect(seen.body == body)
                #expect(seen.head.headers["Content-Length"] == ["4096"])
                #expect(seen.head.headers["X-Extra"] == [""])
                #expect(seen.head.headers["Expect"].isEmpty)
            }
        }
    }

    @Test("https uses caFile: an unreadable CA bundle fails as a TLS error")
    func caFileIsWired() async throws {
        try await withTestServer { server in
            try await withTransport { transport in
                var secure = CurlRequest(url: "https://localhost:\(server.port)/ok")
                secure.pinnedAddresses = [server.address]
                secure.caFile = "/nonexistent/httpdns-proxy-test-ca.pem"
                let error = await transportError { try await transport.send(secure) }
                #expect(error?.kind == .tls)
                // CURLE_SSL_CACERT_BADFILE: libcurl tried to load exactly that file.
                #expect(error?.curlCode == 77)
            }
        }
    }

    @Test("error descriptions leave out the query string and userinfo")
    func errorDescriptionIsRedacted() async throws {
        try await withTestServer { server in
            try await withTransport { transport in
                var signed = CurlRequest(url: "http://user:hunter2pw@localhost:\(server.port)/resolve?s=SECRETSIG&key=K&t=1")
                signed.pinnedAddresses = [deadAddress]
                let error = try #require(await transportError { try await transport.send(signed) })
                #expect(error.kind == .connectFailed)
                for secret in ["SECRETSIG", "key=K", "hunter2pw", "user:", "?"] {
                    #expect(!error.description.contains(secret), "\(secret) leaked: \(error.description)")
                }
                #expect(error.description.contains("http://localhost:\(server.port)/resolve"))
            }
        }
    }

    @Test("invalid requests fail before touching the network")
    func invalidRequests() async throws {
        try await withTestServer { server in
            try await withTransport { transport in
                var wrongScheme = request(server, "/ok")
                wrongScheme.url = "ftp://localhost:\(server.port)/ok"
                var injectedHeader = request(server, "/ok")
                injectedHeader.headers = [(name: "X-A", value: "1\r\nX-Injected: 2")]
                var badHeaderName = request(server, "/ok")
                badHeaderName.headers = [(name: "Bad Name", value: "1")]
                var hostnamePin = request(server, "/ok")
                hostnamePin.pinnedAddresses = ["localhost"]
                var zeroTimeout = request(server, "/ok")
                zeroTimeout.timeout = .zero
                for invalid in [wrongScheme, injectedHeader, badHeaderName, hostnamePin, zeroTimeout] {
                    let error = await transportError { try await transport.send(invalid) }
                    #expect(error?.kind == .invalidRequest)
                }
                let accepted = try await server.snapshot().acceptedConnections
                #expect(accepted == 0)
            }
        }
    }
}

@Suite("CurlTransport connect-to addressing")
struct CurlTransportConnectAddressTests {
    @Test("connectAddress reaches exactly that IP and keeps the URL's Host")
    func connectAddressRoutesToTheIP() async throws {
        try await withTestServer(on: "127.0.0.2") { server in
            try await withTransport { transport in
                var request = request(server, "/ok", pinnedTo: [])
                request.connectAddress = "127.0.0.2"
                let first = try await transport.send(request)
                #expect(first.status == 200)
                #expect(first.remoteIP == "127.0.0.2")
                let second = try await transport.send(request)
                #expect(second.reusedConnection)
                let seen = try await server.snapshot().requests
                #expect(seen.first?.head.headers["Host"] == ["localhost:\(server.port)"])
            }
        }
    }

    @Test("a connectAddress that is not an IP literal is rejected before any I/O")
    func connectAddressMustBeAnIP() async throws {
        try await withTransport { transport in
            var request = CurlRequest(url: "http://localhost:9/")
            request.connectAddress = "example.com"
            do {
                _ = try await transport.send(request)
                Issue.record("accepted a host name as connect address")
            } catch let error as CurlTransportError {
                #expect(error.shortDescription == "invalid_request")
            }
        }
    }
}

import Foundation
import Testing
import TestSupport

/// `--tls-listen` through the real binary: curl speaking to the proxy over TLS (`-x https://`,
/// `--proxy-cacert`) for plain HTTP and for CONNECT, names resolved by the fake HTTPDNS service;
/// certificates chosen by SNI and replaced by SIGHUP; client certificates standing in for Basic
/// credentials; bytes that are not TLS refused with nothing dialed; headless Chromium with
/// `--proxy-server=https://`.
@Suite("TLS listener", .onBlockingThreads, .timeLimit(.minutes(2)))
struct TLSListenerTests {
    /// A CA, a proxy certificate for localhost and 127.0.0.1, and their files.
    struct Certificates {
        let ca: TestCA
        let caFile: String
        let leaf: TestLeafCertificate
        let certificateFile: String
        let keyFile: String

        init(names: [String] = ["localhost"], commonName: String? = nil) throws {
            ca = try TestCA()
            caFile = try ca.writeCAFile()
            leaf = try ca.issueLeaf(dnsNames: names, ipAddresses: ["127.0.0.1"], commonName: commonName)
            certificateFile = try TestCA.writeTemporaryFile(named: "proxy.pem", contents: leaf.certificatePEM)
            keyFile = try TestCA.writeTemporaryFile(named: "proxy.key", contents: leaf.privateKeyPEM)
        }

        var arguments: [String] { ["--tls-cert", certificateFile, "--tls-key", keyFile] }
    }

    static func launch(_ service: FakeHTTPDNSService, _ extra: [String]) throws -> (ProxyProcess, Int) {
        let proxy = try HTTPDNSResolutionTests.launchOnService(service, ["--tls-listen", "127.0.0.1:0"] + extra)
        guard let line = proxy.waitForLog(where: { $0["message"] as? String == "tls listening" }),
              let address = line["address"] as? String, let port = ProxyProcess.port(ofAddress: address)
        else {
            proxy.stop()
            throw ProxyProcess.Failure(description: "no 'tls listening' line: \(proxy.diagnostics)")
        }
        return (proxy, port)
    }

    /// The subject of the certificate the listener presents for `serverName` (openssl s_client).
    static func presentedSubject(port: Int, serverName: String) throws -> String {
        let output = try Tools.output("openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", serverName], stdin: "")
        return output.split(separator: "\n").first { $0.hasPrefix("subject=") }.map(String.init) ?? "none"
    }

    @Test func curlOverTLSForHTTPAndConnect() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let certificates = try Certificates()
        let (proxy, port) = try Self.launch(service, certificates.arguments + ["--connect-ports", String(origin.port)])
        defer { proxy.stop() }

        for (label, extra) in [("http", [String]()), ("connect", ["--proxytunnel"])] {
            let response = try Curl.fetch(
                "http://origin.test:\(origin.port)/hello", proxy: "https://localhost:\(port)", extra: ["--proxy-cacert", certificates.caFile] + extra)
            #expect(response.status == 200, "\(label): \(response.stderr) \(proxy.diagnostics)")
            #expect(response.bodyText == "hello")
            let method = label == "http" ? "GET" : "CONNECT"
            let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == method }), proxy.diagnostics)
            #expect(entry.string("host") == "origin.test")
            #expect(entry.string("ip") == "127.0.0.1")
        }
        #expect(origin.requests().count == 2)
        #expect(origin.requests().allSatisfy { $0.headers["host"] == ["origin.test:\(origin.port)"] })

        // curl checks the proxy's certificate: without the CA it refuses to talk.
        let untrusted = try Curl.fetch("http://origin.test:\(origin.port)/hello", proxy: "https://localhost:\(port)")
        #expect(untrusted.exitCode != 0 && untrusted.status == 0)
        #expect(origin.requests().count == 2)
    }

    /// SOCKS5 inside TLS (the first byte after the handshake decides, as on `listen`), from
    /// Python's ssl module: a CONNECT by name reaches the HTTPDNS address.
    @Test func socks5InsideTLS() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let certificates = try Certificates()
        let (proxy, port) = try Self.launch(service, certificates.arguments + ["--connect-ports", String(origin.port)])
        defer { proxy.stop() }
        let script = """
            import socket, ssl, struct, sys
            port, ca, origin = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
            context = ssl.create_default_context(cafile=ca)
            with context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost") as s:
                s.sendall(b"\\x05\\x01\\x00")
                assert s.recv(2) == b"\\x05\\x00"
                name = b"origin.test"
                s.sendall(b"\\x05\\x01\\x00\\x03" + bytes([len(name)]) + name + struct.pack(">H", origin))
                reply = s.recv(10)
                assert reply[:2] == b"\\x05\\x00", reply
                s.sendall(b"GET /hello HTTP/1.1\\r\\nHost: origin.test\\r\\nConnection: close\\r\\n\\r\\n")
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
                print(data.decode().split("\\r\\n")[0], data.decode().split("\\r\\n\\r\\n", 1)[1])
            """
        let output = try Tools.output("python3", ["-c", script, String(port), certificates.caFile, String(origin.port)])
        #expect(output == "HTTP/1.1 200 OK hello", "\(output) \(proxy.diagnostics)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "SOCKS5" }), proxy.diagnostics)
        #expect(entry.string("host") == "origin.test")
        #expect(entry.string("ip") == "127.0.0.1")
    }

    @Test func bytesThatAreNotTLSAreRefusedAndNothingIsDialed() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let certificates = try Certificates()
        // A record that never completes (a SOCKS greeting is 3 bytes; a 64 KiB record length) waits
        // for the handshake's bound, `header-timeout`.
        let (proxy, port) = try Self.launch(service, certificates.arguments + ["--connect-ports", String(origin.port), "--header-timeout", "1s"])
        defer { proxy.stop() }

        for garbage in [
            Array("GET http://origin.test:\(origin.port)/hello HTTP/1.1\r\nHost: origin.test\r\n\r\n".utf8),
            [0x05, 0x01, 0x00] as [UInt8],
            [0x16, 0x03, 0x01, 0xFF, 0xFF] + [UInt8](repeating: 0x41, count: 64),
        ] {
            let client = try RawClient(port: port)
            defer { client.close() }
            try client.send(garbage)
            let answer = try client.readToEOF(timeout: .seconds(10))
            // At most a TLS alert record (content type 21), then the close; never HTTP or SOCKS.
            #expect(answer.isEmpty || answer.first == 21, "\(answer.prefix(16))")
        }
        #expect(origin.requests().isEmpty)
        #expect(service.queryCount(for: "origin.test") == 0, "nothing was resolved")
        // Still serving.
        let response = try Curl.fetch(
            "http://origin.test:\(origin.port)/hello", proxy: "https://localhost:\(port)", extra: ["--proxy-cacert", certificates.caFile])
        #expect(response.status == 200, "\(response.stderr) \(proxy.diagnostics)")

        // Counted: three failed handshakes, one completed; and when the certificate expires (the
        // test CA issues for 30 days), for an expiry alert.
        let samples = try MetricsTests.scrape(proxy).samples
        #expect(samples["httpdns_proxy_tls_listener_handshakes_total{result=\"failed\"}"] == 3, "\(samples.filter { $0.key.contains("tls_listener") })")
        #expect(samples["httpdns_proxy_tls_listener_handshakes_total{result=\"ok\"}"] == 1)
        let expiry = try #require(samples["httpdns_proxy_tls_listener_certificate_expiry_timestamp_seconds"])
        let days = (expiry - Date().timeIntervalSince1970) / 86400
        #expect(days > 29 && days < 31, "\(days) days")
    }

    @Test func theCertificateFollowsSNIAndSIGHUPReplacesIt() async throws {
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        let first = try Certificates(names: ["localhost"], commonName: "first-proxy")
        let second = try first.ca.issueLeaf(dnsNames: ["proxy.corp.test"], commonName: "corp-proxy")
        let secondCert = try TestCA.writeTemporaryFile(named: "corp.pem", contents: second.certificatePEM + second.privateKeyPEM)
        let (proxy, port) = try Self.launch(service, [
            "--tls-cert", first.certificateFile, "--tls-cert", secondCert, "--tls-key", first.keyFile, "--tls-key", secondCert,
        ])
        defer { proxy.stop() }

        #expect(try Self.presentedSubject(port: port, serverName: "localhost").contains("first-proxy"))
        #expect(try Self.presentedSubject(port: port, serverName: "proxy.corp.test").contains("corp-proxy"))
        #expect(try Self.presentedSubject(port: port, serverName: "unknown.test").contains("first-proxy"), "no match: the first")

        // The first certificate file is replaced; SIGHUP reads it again for new connections.
        let renewed = try first.ca.issueLeaf(dnsNames: ["localhost"], commonName: "renewed-proxy")
        try renewed.certificatePEM.write(toFile: first.certificateFile, atomically: true, encoding: .utf8)
        try renewed.privateKeyPEM.write(toFile: first.keyFile, atomically: true, encoding: .utf8)
        proxy.signal(SIGHUP)
        let reloaded = proxy.waitForLog(where: { $0["message"] as? String == "configuration reloaded" })
        #expect((reloaded?["result"] as? String)?.contains("tls-listen certificates read again (2 files)") == true, proxy.diagnostics)
        #expect(try Self.presentedSubject(port: port, serverName: "localhost").contains("renewed-proxy"))

        // A key that does not match: the reload fails and the certificates in force stay.
        let stranger = try first.ca.issueLeaf(dnsNames: ["localhost"], commonName: "stranger")
        try stranger.privateKeyPEM.write(toFile: first.keyFile, atomically: true, encoding: .utf8)
        proxy.signal(SIGHUP)
        let failed = try #require(
            proxy.waitForLog(where: { $0["message"] as? String == "configuration reload failed; the running configuration stays" }),
            proxy.diagnostics)
        #expect((failed["error"] as? String)?.contains("cannot set up the TLS listener") == true, "\(failed)")
        #expect(try Self.presentedSubject(port: port, serverName: "localhost").contains("renewed-proxy"))
    }

    /// A kept-alive connection made before SIGHUP carries on with the certificate it started with
    /// while new connections get the renewed one. One Python process drives it all (its ssl module
    /// reports each connection's certificate): a request, the files replaced and SIGHUP sent,
    /// new connections until one presents the renewed certificate, then a second request on the
    /// first connection.
    @Test func anOpenConnectionOutlivesACertificateSwap() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let certificates = try Certificates(commonName: "before-renewal")
        let (proxy, port) = try Self.launch(service, certificates.arguments + ["--connect-ports", String(origin.port)])
        defer { proxy.stop() }
        let renewed = try certificates.ca.issueLeaf(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"], commonName: "after-renewal")
        let renewedCert = try TestCA.writeTemporaryFile(named: "renewed.pem", contents: renewed.certificatePEM)
        let renewedKey = try TestCA.writeTemporaryFile(named: "renewed.key", contents: renewed.privateKeyPEM)
        let script = """
            import os, shutil, signal, socket, ssl, sys, time
            port, ca, origin, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
            cert, key, new_cert, new_key = sys.argv[5:9]
            context = ssl.create_default_context(cafile=ca)
            def connect():
                return context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
            def name(s):
                return dict(x[0] for x in s.getpeercert()["subject"])["commonName"]
            def get(s):
                s.sendall(b"GET http://origin.test:%d/hello HTTP/1.1\\r\\nHost: origin.test:%d\\r\\n\\r\\n" % (origin, origin))
                data = b""
                while b"\\r\\n\\r\\nhello" not in data:
                    chunk = s.recv(65536)
                    if not chunk:
                        return "closed"
                    data += chunk
                return data.split(b"\\r\\n")[0].decode()
            old = connect()
            print("old:", name(old), get(old))
            shutil.copyfile(new_cert, cert)
            shutil.copyfile(new_key, key)
            os.kill(pid, signal.SIGHUP)
            deadline = time.monotonic() + 10
            while True:
                fresh = connect()
                seen = name(fresh)
                fresh.close()
                if seen == "after-renewal" or time.monotonic() > deadline:
                    break
            print("new:", seen)
            print("old again:", name(old), get(old))
            """
        let output = try Tools.output("python3", [
            "-c", script, String(port), certificates.caFile, String(origin.port), String(proxy.pid),
            certificates.certificateFile, certificates.keyFile, renewedCert, renewedKey,
        ])
        #expect(output == "old: before-renewal HTTP/1.1 200 OK\nnew: after-renewal\nold again: before-renewal HTTP/1.1 200 OK",
                "\(output) \(proxy.diagnostics)")
        #expect(origin.requests().count == 2)
    }

    /// Without the mixed port (`listen-socks false`) the HTTP handler is there before the
    /// handshake and learns the certificate from its completion event.
    @Test func aClientCertificateWithoutTheMixedPort() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let certificates = try Certificates()
        let client = try certificates.ca.issueLeaf(commonName: "build-agent-8")
        let clientCert = try TestCA.writeTemporaryFile(named: "client.pem", contents: client.certificatePEM)
        let clientKey = try TestCA.writeTemporaryFile(named: "client.key", contents: client.privateKeyPEM)
        let hash = try Tools.output("openssl", ["passwd", "-5", "five-pw"])
        let htpasswd = try Tools.tempFile("five:\(hash)\n")
        defer { unlink(htpasswd) }
        let (proxy, port) = try Self.launch(service, certificates.arguments + [
            "--tls-client-ca", certificates.caFile, "--proxy-auth", "@\(htpasswd)", "--listen-socks", "false",
        ])
        defer { proxy.stop() }
        let response = try Curl.fetch(
            "http://origin.test:\(origin.port)/hello", proxy: "https://localhost:\(port)",
            extra: ["--proxy-cacert", certificates.caFile, "--proxy-cert", clientCert, "--proxy-key", clientKey])
        #expect(response.status == 200, "\(response.stderr) \(proxy.diagnostics)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "GET" }), proxy.diagnostics)
        #expect(entry.string("user") == "build-agent-8")
    }

    /// Twenty requests written at once over TLS (past the reader's pipelining hold of 16) are all
    /// answered, in order: the hold is released through the TLS handler.
    @Test func pipelinedRequestsOverTLSAreAllAnswered() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let certificates = try Certificates()
        let (proxy, port) = try Self.launch(service, certificates.arguments)
        defer { proxy.stop() }
        let script = """
            import socket, ssl, sys
            port, ca, origin = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
            context = ssl.create_default_context(cafile=ca)
            with context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=20), server_hostname="localhost") as s:
                s.sendall(b"".join(b"GET http://origin.test:%d/hello?n=%d HTTP/1.1\\r\\nHost: origin.test:%d\\r\\n\\r\\n" % (origin, n, origin)
                                   for n in range(20)))
                data = b""
                while data.count(b"\\r\\n\\r\\nhello") < 20:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                print(data.count(b"HTTP/1.1 200 OK"))
            """
        let output = try Tools.output("python3", ["-c", script, String(port), certificates.caFile, String(origin.port)])
        #expect(output == "20", "\(output) \(proxy.diagnostics)")
        #expect(origin.requests().map(\.uri) == (0..<20).map { "/hello?n=\($0)" })
    }

    @Test func aClientCertificateStandsInForBasicCredentials() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let certificates = try Certificates()
        let client = try certificates.ca.issueLeaf(commonName: "build-agent-7")
        let clientCert = try TestCA.writeTemporaryFile(named: "client.pem", contents: client.certificatePEM)
        let clientKey = try TestCA.writeTemporaryFile(named: "client.key", contents: client.privateKeyPEM)
        let hash = try Tools.output("openssl", ["passwd", "-5", "five-pw"])
        let htpasswd = try Tools.tempFile("five:\(hash)\n")
        defer { unlink(htpasswd) }
        let (proxy, port) = try Self.launch(service, certificates.arguments + [
            "--tls-client-ca", certificates.caFile, "--proxy-auth", "@\(htpasswd)", "--connect-ports", String(origin.port),
        ])
        defer { proxy.stop() }

        let url = "http://origin.test:\(origin.port)/hello"
        let proxyURL = "https://localhost:\(port)"
        let trusted = ["--proxy-cacert", certificates.caFile]
        let certified = try Curl.fetch(url, proxy: proxyURL, extra: trusted + ["--proxy-cert", clientCert, "--proxy-key", clientKey])
        #expect(certified.status == 200, "\(certified.stderr) \(proxy.diagnostics)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "GET" }), proxy.diagnostics)
        #expect(entry.string("user") == "build-agent-7")
        #expect((origin.requests().first?.headers["proxy-authorization"] ?? []).isEmpty)

        // A CONNECT on a certified connection needs no credentials either.
        let tunnel = try Curl.fetch(url, proxy: proxyURL, extra: trusted + ["--proxy-cert", clientCert, "--proxy-key", clientKey, "--proxytunnel"])
        #expect(tunnel.status == 200, "\(tunnel.stderr) \(proxy.diagnostics)")
        let tunnelRecord = try #require(proxy.waitForAccessLog(where: { $0.string("method") == "CONNECT" }), proxy.diagnostics)
        #expect(tunnelRecord.string("user") == "build-agent-7")

        // No certificate, or one from another CA: the handshake fails, whatever the Basic credentials.
        let anonymous = try Curl.fetch(url, proxy: proxyURL, extra: trusted + ["--proxy-user", "five:five-pw"])
        #expect(anonymous.status == 0 && anonymous.exitCode != 0, "\(anonymous.stderr)")
        let stranger = try TestCA(commonName: "Unrelated Test CA").issueLeaf(commonName: "intruder")
        let strangerCert = try TestCA.writeTemporaryFile(named: "stranger.pem", contents: stranger.certificatePEM)
        let strangerKey = try TestCA.writeTemporaryFile(named: "stranger.key", contents: stranger.privateKeyPEM)
        let forged = try Curl.fetch(url, proxy: proxyURL, extra: trusted + ["--proxy-cert", strangerCert, "--proxy-key", strangerKey])
        #expect(forged.status == 0 && forged.exitCode != 0, "\(forged.stderr)")
        #expect(origin.requests().count == 2)
        #expect(try MetricsTests.scrape(proxy).samples["httpdns_proxy_tls_listener_handshakes_total{result=\"failed\"}"] == 2)
        // The plain listener still asks for Basic credentials.
        #expect(try Curl.fetch(url, proxy: proxy.proxyURL).status == 407)
        #expect(try Curl.fetch(url, proxy: proxy.proxyURL, extra: ["--proxy-user", "five:five-pw"]).status == 200)
    }

    @Test(.enabled(if: ExternalTool.shouldRun("chromium (apt-get install chromium)", present: ExternalTool.chromium != nil)))
    func headlessChromiumWithAnHTTPSProxy() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        service.set("origin.test", .init(ipv4: ["127.0.0.1"], ttl: 300))
        let certificates = try Certificates()
        let (proxy, port) = try Self.launch(service, certificates.arguments + ["--connect-ports", String(origin.port)])
        defer { proxy.stop() }
        // Chromium trusts the proxy's certificate by its key (it has no CA file option).
        let pin = try certificates.leaf.spkiSHA256Base64()
        let dom = try HeadlessChromium.dumpDOM(
            "http://origin.test:\(origin.port)/hello", proxy: "https://127.0.0.1:\(port)", extra: ["--ignore-certificate-errors-spki-list=\(pin)"])
        #expect(dom.contains("hello"), "\(dom.prefix(500)) \(proxy.diagnostics)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("host") == "origin.test" }), proxy.diagnostics)
        #expect(entry.string("ip") == "127.0.0.1")
    }
}

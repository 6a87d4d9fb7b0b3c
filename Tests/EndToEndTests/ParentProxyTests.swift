import Foundation
import Glibc
import Testing
import TestSupport

/// `--parent-proxy` through the binary with a real squid as the parent, on loopback: HTTP, CONNECT
/// and SOCKS reach the origin through squid, which is asked for the address the fake HTTPDNS
/// service gave (`CONNECT 127.0.0.1:PORT` in its log, never the name); `route` rules send one name
/// direct and deny another; a parent answering 503 for one address gets the next; a parent that
/// refuses IP literals, or CONNECT beyond 443, is served by name with `--parent-resolve parent`
/// (plain HTTP then as ordinary proxy requests, `Host` intact); a dead parent fails or, with
/// `--parent-down direct`, is bypassed.
@Suite("Parent proxy", .onBlockingThreads, .serialized, .timeLimit(.minutes(3)))
struct ParentProxyTests {
    static let squidPath = ["/usr/sbin/squid", "/usr/bin/squid"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// A squid on 127.0.0.1 with an access log; `refuseIPLiterals` denies CONNECT to an IP address,
    /// as many corporate parents do, and resolves names from its own hosts file.
    final class Squid {
        let directory: URL
        let port: Int
        let child: ChildProcess
        /// squid names its shared-memory segments (/dev/shm, one namespace for the host) by its
        /// service name: one per instance, so squids of tests running side by side do not share them.
        let serviceName = "e2esquid" + String(UUID().uuidString.filter(\.isHexDigit).prefix(12))

        /// `tls`: a certificate and key for an `https_port` (squid speaks TLS to its clients).
        init(
            refuseIPLiterals: Bool = false, hosts: String = "", users: String? = nil, connectOnly443: Bool = false,
            tls: (certificatePEM: String, privateKeyPEM: String)? = nil
        ) throws {
            guard let squid = ParentProxyTests.squidPath else { throw ExternalTool.Failure(description: "squid is not installed") }
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-squid-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            port = try Loopback.unusedPort()
            let user = getpwnam("proxy") != nil ? "proxy" : "nobody"
            let path = directory.path
            try (hosts + "\n").write(toFile: path + "/hosts", atomically: true, encoding: .utf8)
            var listener = "http_port 127.0.0.1:\(port)"
            if let tls {
                try tls.certificatePEM.write(toFile: path + "/cert.pem", atomically: true, encoding: .utf8)
                try tls.privateKeyPEM.write(toFile: path + "/key.pem", atomically: true, encoding: .utf8)
                for file in ["cert.pem", "key.pem"] { chmod(path + "/" + file, 0o644) }
                listener = "https_port 127.0.0.1:\(port) tls-cert=\(path)/cert.pem tls-key=\(path)/key.pem"
            }
            var configuration = """
                \(listener)
                visible_hostname test-parent
                pid_filename \(path)/squid.pid
                cache_log \(path)/cache.log
                coredump_dir \(path)
                cache_effective_user \(user)
                access_log stdio:\(path)/access.log
                cache_store_log none
                logfile_rotate 0
                cache deny all
                cache_mem 0 MB
                hosts_file \(path)/hosts
                dns_nameservers 127.0.0.1
                pinger_enable off
                netdb_filename none
                client_db off
                shutdown_lifetime 0 seconds
                connect_timeout 5 seconds
                acl CONNECT method CONNECT

                """
            if let users {
                try users.write(toFile: path + "/users", atomically: true, encoding: .utf8)
                chmod(path + "/users", 0o644)
                configuration += "auth_param basic program /usr/lib/squid/basic_ncsa_auth \(path)/users\nauth_param basic realm parent\n"
                    + "acl authed proxy_auth REQUIRED\nhttp_access deny !authed\n"
            }
            if refuseIPLiterals {
                configuration += "acl to_ip dstdom_regex -n ^[0-9.]+$\nhttp_access deny CONNECT to_ip\n"
            }
            if connectOnly443 {
                // As squid ships: CONNECT only to the SSL ports.
                configuration += "acl SSL_ports port 443\nhttp_access deny CONNECT !SSL_ports\n"
            }
            configuration += "http_access allow localhost\nhttp_access deny all\n"
            try configuration.write(toFile: path + "/squid.conf", atomically: true, encoding: .utf8)
            chmod(path, 0o777)
            let devNull = try ChildProcess.open("/dev/null", flags: O_RDONLY)
            let output = try ChildProcess.open(path + "/out.log", flags: O_WRONLY | O_CREAT | O_TRUNC)
            defer { for fd in [devNull, output] { Glibc.close(fd) } }
            child = try ChildProcess(
                executable: squid, arguments: ["-N", "-n", serviceName, "-f", path + "/squid.conf"], environment: ChildEnvironment.make(overrides: [:]),
                stdin: devNull, stdout: output, stderr: output)
            guard Self.listening(port: port, within: .seconds(15)) else {
                child.stop()
                throw ExternalTool.Failure(description: "squid did not listen: \((try? String(contentsOfFile: path + "/cache.log", encoding: .utf8)) ?? "")")
            }
        }

        /// Whether something accepts on 127.0.0.1:`port` within `limit` (squid starting up).
        static func listening(port: Int, within limit: Duration) -> Bool {
            let deadline = ContinuousClock.now + limit
            while ContinuousClock.now < deadline {
                if let client = try? RawClient(port: port) {
                    client.close()
                    return true
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return false
        }

        /// The access log's request lines ("CONNECT 127.0.0.1:PORT"), once `count` are there.
        func requests(atLeast count: Int) -> [String] {
            let deadline = ContinuousClock.now + .seconds(10)
            while true {
                let lines = ((try? String(contentsOfFile: directory.path + "/access.log", encoding: .utf8)) ?? "")
                    .split(separator: "\n").map { line -> String in
                        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                        return fields.count > 6 ? "\(fields[3]) \(fields[5]) \(fields[6])" : String(line)
                    }
                    .filter { !$0.hasPrefix("NONE_NONE/000") }  // the readiness probe's connection
                if lines.count >= count || ContinuousClock.now > deadline { return lines }
                Thread.sleep(forTimeInterval: 0.05)  // squid writes its log at the end of each tunnel
            }
        }

        func stop() {
            child.stop()
            try? FileManager.default.removeItem(at: directory)
            for segment in (try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm")) ?? [] where segment.hasPrefix(serviceName + "-") {
                try? FileManager.default.removeItem(atPath: "/dev/shm/" + segment)
            }
        }
    }

    static let names = ["origin.test", "direct.test", "denied.test", "two.test"]

    static func service(origin: TestOrigin) async throws -> FakeHTTPDNSService {
        let service = try await FakeHTTPDNSService.start()
        for name in names.dropLast() { service.set(name, .init(ipv4: ["127.0.0.1"], ttl: 300)) }
        // Nothing listens on 127.0.0.66: squid answers 503 for it, and the proxy asks for the next.
        service.set("two.test", .init(ipv4: ["127.0.0.66", "127.0.0.1"], ttl: 300))
        return service
    }

    @Test(.enabled(if: ExternalTool.shouldRun("squid (apt-get install squid)", present: Self.squidPath != nil)))
    func httpConnectAndSocksGoThroughTheParentToTheHTTPDNSAddress() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await Self.service(origin: origin)
        defer { service.stop() }
        let squid = try Squid()
        defer { squid.stop() }
        let proxy = try HTTPDNSResolutionTests.launchOnService(service, [
            "--parent-proxy", "http://127.0.0.1:\(squid.port)", "--route", "direct.test=direct", "--route", "denied.test=deny",
            "--connect-ports", String(origin.port), "--pool-max-idle", "0",
        ])
        defer { proxy.stop() }
        let port = origin.port
        let target = "127.0.0.1:\(port)"

        for (label, extra, proxyURL) in [
            ("HTTP", [String](), proxy.proxyURL), ("CONNECT", ["--proxytunnel"], proxy.proxyURL),
            ("SOCKS5", [], "socks5h://127.0.0.1:\(proxy.port)"),
        ] {
            let response = try Curl.fetch("http://origin.test:\(port)/hello", proxy: proxyURL, extra: extra)
            #expect(response.status == 200 && response.bodyText == "hello", "\(label): \(response.stderr) \(proxy.diagnostics)")
        }
        let throughParent = squid.requests(atLeast: 3)
        #expect(throughParent == Array(repeating: "TCP_TUNNEL/200 CONNECT \(target)", count: 3), "\(throughParent)")

        // two.test: squid cannot reach 127.0.0.66 (503), so the proxy asks for 127.0.0.1.
        let second = try Curl.fetch("http://two.test:\(port)/hello", proxy: proxy.proxyURL)
        #expect(second.status == 200, "\(second.stderr) \(proxy.diagnostics)")
        let all = squid.requests(atLeast: 5)
        #expect(all.dropFirst(3) == ["NONE_NONE/503 CONNECT 127.0.0.66:\(port)", "TCP_TUNNEL/200 CONNECT \(target)"], "\(all)")

        // direct.test: rule 1, not through the parent; denied.test: rule 2, 403, nowhere.
        let direct = try Curl.fetch("http://direct.test:\(port)/hello", proxy: proxy.proxyURL)
        #expect(direct.status == 200, "\(direct.stderr)")
        let denied = try Curl.fetch("http://denied.test:\(port)/hello", proxy: proxy.proxyURL)
        #expect(denied.status == 403 && denied.bodyText.contains("route rule 2"), "\(denied.bodyText)")
        #expect(squid.requests(atLeast: 5).count == 5, "direct.test did not go through the parent")
        #expect(origin.requests().count == 5)
        #expect(service.queryCount(for: "denied.test") == 0)
    }

    @Test(.enabled(if: ExternalTool.shouldRun("squid (apt-get install squid)", present: Self.squidPath != nil)))
    func aParentThatRefusesAddressesIsAskedForTheName() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await Self.service(origin: origin)
        defer { service.stop() }
        let squid = try Squid(refuseIPLiterals: true, hosts: "127.0.0.1 origin.test")
        defer { squid.stop() }
        let url = "http://origin.test:\(origin.port)/hello"
        let common = ["--parent-proxy", "http://127.0.0.1:\(squid.port)", "--connect-ports", String(origin.port), "--pool-max-idle", "0"]

        let local = try HTTPDNSResolutionTests.launchOnService(service, common)
        let refused = try Curl.fetch(url, proxy: local.proxyURL)
        local.stop()
        #expect(refused.status == 502, "\(refused.bodyText)")
        #expect(refused.bodyText.contains("answered CONNECT 127.0.0.1:\(origin.port) with 'HTTP/1.1 403 Forbidden'"), "\(refused.bodyText)")
        #expect(refused.bodyText.contains("--parent-resolve parent"), "\(refused.bodyText)")

        let byName = try HTTPDNSResolutionTests.launchOnService(service, common + ["--parent-resolve", "parent"])
        defer { byName.stop() }
        let response = try Curl.fetch(url, proxy: byName.proxyURL, extra: ["--proxytunnel"])
        #expect(response.status == 200, "\(response.stderr) \(byName.diagnostics)")
        #expect(squid.requests(atLeast: 2).last == "TCP_TUNNEL/200 CONNECT origin.test:\(origin.port)")
        let plain = try Curl.fetch(url, proxy: byName.proxyURL)
        #expect(plain.status == 200, "\(plain.stderr)")
        #expect(squid.requests(atLeast: 3).last == "TCP_MISS/200 GET http://origin.test:\(origin.port)/hello")
    }

    /// Credentials in the URL (a `%40` for the `@` in the password) go to the parent as Basic;
    /// without them the 407 is explained.
    @Test(.enabled(if: ExternalTool.shouldRun("squid (apt-get install squid)", present: Self.squidPath != nil)))
    func credentialsInTheURLReachTheParent() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await Self.service(origin: origin)
        defer { service.stop() }
        let hash = try Tools.output("openssl", ["passwd", "-apr1", "s@cret"])
        let squid = try Squid(users: "alice:\(hash)\n")
        defer { squid.stop() }
        let url = "http://origin.test:\(origin.port)/hello"
        let common = ["--connect-ports", String(origin.port), "--pool-max-idle", "0"]

        let anonymous = try HTTPDNSResolutionTests.launchOnService(service, common + ["--parent-proxy", "http://127.0.0.1:\(squid.port)"])
        let refused = try Curl.fetch(url, proxy: anonymous.proxyURL)
        anonymous.stop()
        #expect(refused.status == 502 && refused.bodyText.contains("asks for credentials"), "\(refused.bodyText)")

        let proxy = try HTTPDNSResolutionTests.launchOnService(
            service, common + ["--parent-proxy", "http://alice:s%40cret@127.0.0.1:\(squid.port)", "--log-level", "debug"])
        defer { proxy.stop() }
        let response = try Curl.fetch(url, proxy: proxy.proxyURL)
        #expect(response.status == 200, "\(response.stderr) \(proxy.diagnostics)")
        #expect(squid.requests(atLeast: 2).last == "TCP_TUNNEL/200 CONNECT 127.0.0.1:\(origin.port)")
        // The password is in no line the proxy wrote (logs, the access log), even at debug level.
        let summary = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/summary", proxy: nil).bodyText
        let written = proxy.stdoutText() + proxy.stderrText() + summary
        // Neither the password nor the Basic token that carries it (base64 of alice:s@cret).
        #expect(summary.contains("alice:***"), "\(summary.prefix(300))")
        #expect(!written.contains("s@cret") && !written.contains("s%40cret") && !written.contains("YWxpY2U6c0BjcmV0"))
    }

    /// squid as it ships allows CONNECT to 443 only: a plain HTTP request's tunnel to port PORT is
    /// refused, and the 502 says what to set; with `--parent-resolve parent` plain HTTP goes as an
    /// ordinary proxy request naming the host (`Host` intact; pooled to the parent).
    @Test(.enabled(if: ExternalTool.shouldRun("squid (apt-get install squid)", present: Self.squidPath != nil)))
    func aParentAllowingConnectTo443OnlyIsServedByName() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await Self.service(origin: origin)
        defer { service.stop() }
        let squid = try Squid(hosts: "127.0.0.1 origin.test", connectOnly443: true)
        defer { squid.stop() }
        let url = "http://origin.test:\(origin.port)/hello"
        let common = ["--parent-proxy", "http://127.0.0.1:\(squid.port)", "--connect-ports", String(origin.port)]

        let local = try HTTPDNSResolutionTests.launchOnService(service, common)
        let refused = try Curl.fetch(url, proxy: local.proxyURL)
        local.stop()
        #expect(refused.status == 502 && refused.bodyText.contains("--parent-resolve parent"), "\(refused.bodyText)")

        // One event loop, one pool: the second client connection finds the first one's upstream.
        let proxy = try HTTPDNSResolutionTests.launchOnService(service, common + ["--parent-resolve", "parent", "--threads", "1"])
        defer { proxy.stop() }
        // Twice: the second request rides the pooled connection to the parent, in absolute form too.
        for _ in 0..<2 {
            let response = try Curl.fetch(url, proxy: proxy.proxyURL)
            #expect(response.status == 200 && response.bodyText == "hello", "\(response.stderr) \(proxy.diagnostics)")
        }
        #expect(origin.requests().count == 2 && origin.requests().allSatisfy { $0.headers["host"] == ["origin.test:\(origin.port)"] })
        let requests = squid.requests(atLeast: 3)
        #expect(requests.suffix(2) == Array(repeating: "TCP_MISS/200 GET http://origin.test:\(origin.port)/hello", count: 2), "\(requests)")
        let entries = try #require(proxy.waitForAccessLogs(count: 2, where: { $0.string("host") == "origin.test" }), proxy.diagnostics)
        #expect(entries.map { $0.string("source") } == ["parent", "pool"])
    }

    @Test(.enabled(if: ExternalTool.shouldRun("squid (apt-get install squid)", present: Self.squidPath != nil)))
    func aDeadParentFailsOrIsBypassedAsConfigured() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await Self.service(origin: origin)
        defer { service.stop() }
        let squid = try Squid()
        let parent = "http://127.0.0.1:\(squid.port)"
        squid.stop()  // killed: nothing listens on its port any more
        let url = "http://origin.test:\(origin.port)/hello"
        let common = ["--parent-proxy", parent, "--connect-ports", String(origin.port)]

        let failing = try HTTPDNSResolutionTests.launchOnService(service, common)
        let failed = try Curl.fetch(url, proxy: failing.proxyURL)
        failing.stop()
        #expect(failed.status == 502 && failed.bodyText.contains("the parent proxy 127.0.0.1:\(squid.port) is unreachable"), "\(failed.bodyText)")
        #expect(origin.requests().isEmpty)

        // One event loop, one pool: a connection made around the dead parent is not kept, so the
        // second request asks the parent again (and goes direct again) rather than riding it.
        let bypassing = try HTTPDNSResolutionTests.launchOnService(service, common + ["--parent-down", "direct", "--threads", "1"])
        defer { bypassing.stop() }
        for _ in 0..<2 {
            let direct = try Curl.fetch(url, proxy: bypassing.proxyURL)
            #expect(direct.status == 200, "\(direct.stderr) \(bypassing.diagnostics)")
        }
        #expect(origin.requests().count == 2)
        let entries = try #require(bypassing.waitForAccessLogs(count: 2, where: { $0.string("host") == "origin.test" }), bypassing.diagnostics)
        #expect(!entries.contains { $0.string("source") == "pool" }, "\(entries.map(\.jsonText))")
    }
}

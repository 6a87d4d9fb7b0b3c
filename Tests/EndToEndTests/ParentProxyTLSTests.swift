import Foundation
import Testing
import TestSupport

/// `--parent-proxy https://...` through the binary with a real squid speaking TLS to its clients
/// (`https_port`): the proxy verifies squid's certificate against the host in the URL with
/// `--parent-ca-file`, then sends the CONNECT (or, with `--parent-resolve parent`, the plain
/// request) inside that TLS, and TLS to an HTTPS origin inside the tunnel. A parent whose
/// certificate is not trusted gets nothing, and is no reason to go direct.
@Suite("Parent proxy over TLS", .serialized, .timeLimit(.minutes(3)))
struct ParentProxyTLSTests {
    @Test(.enabled(if: ExternalTool.shouldRun("squid (apt-get install squid)", present: ParentProxyTests.squidPath != nil)))
    func anHTTPSParentCarriesPlainRequestsTunnelsAndOriginTLS() async throws {
        let parentCA = try TestCA(commonName: "Parent Test CA")
        let parentLeaf = try parentCA.issueLeaf(dnsNames: ["localhost"])
        let parentCAFile = try parentCA.writeCAFile()
        let originCA = try TestCA()
        let originLeaf = try originCA.issueLeaf(dnsNames: ["secure.test"])
        let originCAFile = try originCA.writeCAFile()
        let tlsOrigin = try await TLSTestOrigin.start(certificatePEM: originLeaf.certificatePEM, privateKeyPEM: originLeaf.privateKeyPEM)
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let service = try await FakeHTTPDNSService.start()
        defer { service.stop() }
        for name in ["origin.test", "secure.test"] { service.set(name, .init(ipv4: ["127.0.0.1"], ttl: 300)) }
        let squid = try ParentProxyTests.Squid(hosts: "127.0.0.1 origin.test", tls: (parentLeaf.certificatePEM, parentLeaf.privateKeyPEM))
        defer { squid.stop() }
        let parentURL = "https://localhost:\(squid.port)"
        let url = "http://origin.test:\(origin.port)/hello"
        let common = [
            "--parent-proxy", parentURL, "--connect-ports", "\(origin.port),\(tlsOrigin.port)", "--ca-file", originCAFile,
            "--tls-upgrade", "secure.test:\(tlsOrigin.port)", "--pool-max-idle", "0",
        ]

        // Trusted through --parent-ca-file: plain HTTP and a client's CONNECT go inside TLS to
        // squid as CONNECT to the HTTPDNS address; a tls-upgrade request's TLS to the origin runs
        // inside that tunnel (TLS in TLS), verified as secure.test against --ca-file.
        let proxy = try HTTPDNSResolutionTests.launchOnService(service, common + ["--parent-ca-file", parentCAFile])
        for extra in [[], ["--proxytunnel"]] {
            let response = try Curl.fetch(url, proxy: proxy.proxyURL, extra: extra)
            #expect(response.status == 200 && response.bodyText == "hello", "\(extra): \(response.stderr) \(proxy.diagnostics)")
        }
        let secure = try Curl.fetch("http://secure.test:\(tlsOrigin.port)/hello", proxy: proxy.proxyURL)
        #expect(secure.status == 200 && secure.bodyText == "hello", "\(secure.bodyText) \(proxy.diagnostics)")
        #expect(tlsOrigin.connections.first?.serverName == "secure.test")
        #expect(tlsOrigin.connections.first?.requestHosts == ["secure.test:\(tlsOrigin.port)"])
        let tunnels = squid.requests(atLeast: 3)
        #expect(
            tunnels == ["TCP_TUNNEL/200 CONNECT 127.0.0.1:\(origin.port)", "TCP_TUNNEL/200 CONNECT 127.0.0.1:\(origin.port)",
                        "TCP_TUNNEL/200 CONNECT 127.0.0.1:\(tlsOrigin.port)"], "\(tunnels)")
        let entry = try #require(proxy.waitForAccessLog(where: { $0.string("host") == "secure.test" }), proxy.diagnostics)
        #expect(entry.string("source") == "httpdns" && entry.string("ip") == "127.0.0.1", "resolved here, not by squid: \(entry.jsonText)")
        proxy.stop()

        // Not trusted (its CA only in --parent-ca-file, which this start lacks): a 502 that says
        // so, nothing sent to squid or the origin, and parent-down direct does not bypass it.
        let untrusting = try HTTPDNSResolutionTests.launchOnService(service, common + ["--parent-down", "direct"])
        let refused = try Curl.fetch(url, proxy: untrusting.proxyURL)
        untrusting.stop()
        #expect(refused.status == 502, "\(refused.bodyText)")
        #expect(refused.bodyText.contains("TLS to the parent proxy \(parentURL) failed"), "\(refused.bodyText)")
        #expect(refused.bodyText.contains("--parent-ca-file"), "\(refused.bodyText)")
        #expect(origin.requests().count == 2)
        // The same with --parent-resolve parent (plain HTTP straight to the parent, over TLS).
        let untrustingByName = try HTTPDNSResolutionTests.launchOnService(service, common + ["--parent-resolve", "parent"])
        let refusedByName = try Curl.fetch(url, proxy: untrustingByName.proxyURL)
        untrustingByName.stop()
        #expect(refusedByName.status == 502 && refusedByName.bodyText.contains("TLS to the parent proxy \(parentURL) failed"), "\(refusedByName.bodyText)")
        #expect(squid.requests(atLeast: 3).count == 3 && origin.requests().count == 2)

        // --parent-resolve parent: plain HTTP goes to squid, over TLS, as an ordinary proxy request.
        let byName = try HTTPDNSResolutionTests.launchOnService(service, common + ["--parent-ca-file", parentCAFile, "--parent-resolve", "parent"])
        defer { byName.stop() }
        let plain = try Curl.fetch(url, proxy: byName.proxyURL)
        #expect(plain.status == 200 && plain.bodyText == "hello", "\(plain.stderr) \(byName.diagnostics)")
        let all = squid.requests(atLeast: 4)
        #expect(all.count == 4 && all.last == "TCP_MISS/200 GET http://origin.test:\(origin.port)/hello", "\(all)")
        #expect(origin.requests().last?.headers["host"] == ["origin.test:\(origin.port)"])
        try await tlsOrigin.shutdown()
    }
}

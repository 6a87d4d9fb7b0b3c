import Foundation
import Testing

/// The admin listener is closed like the proxy: the client ACL applies to it, and a browser on
/// another site cannot make it change anything.
@Suite("Admin access", .onBlockingThreads, .timeLimit(.minutes(1)))
struct AdminAccessTests {
    @Test func clientsOutsideTheACLGet403FromTheAdminListenerButHealthProbesAndLoopbackWork() throws {
        // Loopback is always allowed on the admin listener (the healthcheck probes from it); a
        // refused non-loopback client is checked in ProxyAdminTests (AdminAccessUnitTests).
        let proxy = try ProxyProcess.launch(["--allow-client", "127.0.0.2/32"])
        defer { proxy.stop() }
        let local = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil)
        #expect(local.status == 200, "loopback must keep working for healthcheck and local tools")
        let proxied = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/healthz", proxy: nil, extra: ["--interface", "127.0.0.2"])
        #expect(proxied.status == 200 && proxied.bodyText == "ok\n", "\(proxied.stderr)")
    }

    @Test func aDNSNameAsHostIsRefusedIPsAndLocalhostAreNot() throws {
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        let base = "http://127.0.0.1:\(proxy.adminPort)"
        let rebound = try Curl.fetch("\(base)/stats", proxy: nil, extra: ["-H", "Host: rebind.example:\(proxy.adminPort)"])
        #expect(rebound.status == 403)
        #expect(rebound.bodyText.contains("DNS rebinding"))
        for host in ["localhost:\(proxy.adminPort)", "LOCALHOST.", "127.0.0.1", "[::1]:\(proxy.adminPort)", "10.0.0.1:8081"] {
            let response = try Curl.fetch("\(base)/stats", proxy: nil, extra: ["-H", "Host: \(host)"])
            #expect(response.status == 200, "Host: \(host)")
        }
    }

    @Test func crossSiteChangesAreRefusedSameOriginAndToolsAreNot() throws {
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        let url = "http://127.0.0.1:\(proxy.adminPort)/cache?host=example.com"
        let crossSite = try Curl.fetch(url, proxy: nil, extra: ["-X", "DELETE", "-H", "Origin: http://evil.example"])
        #expect(crossSite.status == 403)
        #expect(crossSite.bodyText.contains("cross-site request refused"))
        let sameOrigin = try Curl.fetch(url, proxy: nil, extra: ["-X", "DELETE", "-H", "Origin: http://127.0.0.1:\(proxy.adminPort)"])
        #expect(sameOrigin.status == 200, "\(sameOrigin.bodyText)")
        let tool = try Curl.fetch(url, proxy: nil, extra: ["-X", "DELETE"])
        #expect(tool.status == 200)
        // Reading is never refused for an Origin (the data is the same the page shows).
        let read = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil, extra: ["-H", "Origin: http://evil.example"])
        #expect(read.status == 200)
    }
}

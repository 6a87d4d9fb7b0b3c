import Foundation
import Testing

/// The admin listener is closed like the proxy: the client ACL applies to it, and a browser on
/// another site cannot make it change anything.
@Suite("Admin access", .timeLimit(.minutes(1)))
struct AdminAccessTests {
    @Test func clientsOutsideTheACLGet403FromTheAdminListener() throws {
        let proxy = try ProxyProcess.launch(["--allow-client", "127.0.0.2/32"])
        defer { proxy.stop() }
        let refused = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/stats", proxy: nil)
        #expect(refused.status == 403)
        #expect(refused.bodyText.contains("client 127.0.0.1 is not allowed to use the admin listener"), "\(refused.bodyText)")
        let purge = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/cache", proxy: nil, extra: ["-X", "DELETE"])
        #expect(purge.status == 403, "a refused client changes nothing either")
        let allowed = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/healthz", proxy: nil, extra: ["--interface", "127.0.0.2"])
        #expect(allowed.status == 200 && allowed.bodyText == "ok\n", "\(allowed.stderr)")
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

import NIOCore
import ProxyConfig
import Testing

@testable import ProxyAdmin

@Suite struct AdminAccessUnitTests {
    private func refusal(_ ip: String, allowed: [String]) -> String? {
        AdminServer.refusal(of: try! SocketAddress(ipAddress: ip, port: 40000), allowed: allowed.map { CIDR($0)! })
    }

    @Test func theClientACLGuardsTheAdminListenerExceptForLoopback() {
        #expect(refusal("192.0.2.7", allowed: ["10.0.0.0/8"])?.contains("not allowed to use the admin listener") == true)
        #expect(refusal("::ffff:192.0.2.7", allowed: ["10.0.0.0/8"]) != nil)
        #expect(refusal("10.1.2.3", allowed: ["10.0.0.0/8"]) == nil)
        #expect(refusal("::ffff:10.1.2.3", allowed: ["10.0.0.0/8"]) == nil)
        #expect(refusal("127.0.0.1", allowed: ["10.0.0.0/8"]) == nil, "loopback is always allowed (healthcheck)")
        #expect(refusal("::1", allowed: ["10.0.0.0/8"]) == nil)
        #expect(AdminServer.refusal(of: try! SocketAddress(ipAddress: "192.0.2.7", port: 1), allowed: nil) == nil, "no ACL given")
    }

    @Test func hostsTheListenerAnswersTo() {
        for host in [nil, "", "127.0.0.1", "127.0.0.1:8081", "localhost", "LocalHost.:8081", "[::1]:8081", "[fd00::1]", "10.0.0.1:80"] {
            #expect(AdminServer.isAcceptableHost(host), "\(String(describing: host))")
        }
        for host in ["rebind.example", "rebind.example:8081", "localhost.evil.example", "[::1", "[notanip]:1", "127.0.0.1.nip.io"] {
            #expect(!AdminServer.isAcceptableHost(host), "\(host)")
        }
    }
}

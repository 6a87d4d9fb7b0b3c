import Testing
@testable import ProxyConfig

@Suite struct HostPortTests {
    @Test(arguments: [
        ("127.0.0.1:8080", "127.0.0.1", 8080, "127.0.0.1:8080"),
        ("[::1]:8080", "::1", 8080, "[::1]:8080"),
        ("[0:0::1]:443", "::1", 443, "[::1]:443"),
        ("localhost:8080", "localhost", 8080, "localhost:8080"),
        ("0.0.0.0:0", "0.0.0.0", 0, "0.0.0.0:0"),
        ("[::]:65535", "::", 65535, "[::]:65535"),
        ("proxy.internal.example:3128", "proxy.internal.example", 3128, "proxy.internal.example:3128"),
        ("my_service:80", "my_service", 80, "my_service:80"),
    ] as [(String, String, Int, String)])
    func parses(text: String, host: String, port: Int, description: String) throws {
        let hostPort = try #require(HostPort(text))
        #expect(hostPort.host == host)
        #expect(hostPort.port == port)
        #expect(hostPort.description == description)
    }

    @Test(arguments: [
        ("localhost", "missing ':port'"),
        (":8080", "the host is missing"),
        ("::1:8080", "must be in brackets"),
        ("[::1]8080", "missing ':port' after ']'"),
        ("[::1:8080", "missing ']'"),
        ("[1.2.3.4]:80", "is not an IPv6 address"),
        ("[fe80::1%eth0]:80", "is not an IPv6 address"),
        ("127.0.0.1:65536", "port '65536' is not a number 0...65535"),
        ("127.0.0.1:", "port '' is not a number"),
        ("127.0.0.1:-1", "port '-1'"),
        ("127.0.0.1:http", "port 'http'"),
        ("127.0.0.1:80 ", "port '80 '"),
        ("1.2.3.256:80", "is neither an IP address nor a valid host name"),
        ("010.0.0.1:80", "is neither"),
        ("bad host:80", "is neither"),
        ("-bad.example:80", "is neither"),
        ("a..b:80", "is neither"),
    ])
    func rejectsWithReason(text: String, fragment: String) {
        #expect(HostPort(text) == nil)
        do {
            _ = try HostPort(parsing: text)
            Issue.record("'\(text)' parsed")
        } catch {
            let message = error.description
            #expect(message.contains(fragment), "\(message)")
            #expect(message.hasPrefix("expected host:port like 127.0.0.1:8080"))
        }
    }

    @Test func ipLiteralHostsCompareCanonically() {
        #expect(HostPort("[0::1]:80") == HostPort(host: "::1", port: 80))
        #expect(HostPort("[::1]:80")?.ipAddress == IPAddress("::1"))
        #expect(HostPort("localhost:80")?.ipAddress == nil)
    }
}

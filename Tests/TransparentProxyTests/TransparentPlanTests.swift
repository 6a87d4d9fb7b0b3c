import HTTP1Codec
import NIOCore
import NIOHTTP1
import ProxyConfig
import Testing

@testable import ProxyUpstream
@testable import ForwardProxy
@testable import TransparentProxy

@Suite struct TransparentPlanTests {
    let original = try! SocketAddress(ipAddress: "10.9.9.9", port: 443)

    func answer(_ ips: [String], _ source: ResolutionSource = .httpdns) -> Resolution {
        Resolution(addresses: ips.map { try! SocketAddress(ipAddress: $0, port: 443) }, source: source)
    }

    @Test func stepsFromDecidedPeeks() {
        #expect(TransparentPlan.step(decided: .tls(serverName: "a.test")) == (.resolve(name: "a.test", http: false), .tls))
        #expect(TransparentPlan.step(decided: .tls(serverName: nil)) == (.relayOriginal, .tlsNoSNI))
        #expect(TransparentPlan.step(decided: .http(host: "a.test")) == (.resolve(name: "a.test", http: true), .http))
        #expect(TransparentPlan.step(decided: .http(host: nil)) == (.relayOriginal, .httpNoHost))
        #expect(TransparentPlan.step(decided: .unknown) == (.relayOriginal, .unknown))
        #expect(TransparentPlan.step(decided: .malformed("x")) == (.relayOriginal, .malformed))
        #expect(TransparentPlan.step(decided: .tooLarge) == (.relayOriginal, .tooLarge))
    }

    @Test func anAnswerWithoutTheDialedAddressIsAHijack() {
        let (route, hijack) = TransparentPlan.route(resolution: answer(["10.1.1.1"]), original: original, http: false, fallback: .original)
        #expect(route == .relayByName)
        #expect(hijack)
    }

    @Test func anAnswerWithTheDialedAddressIsNone() {
        for source in [ResolutionSource.httpdns, .cache, .stale] {
            let (route, hijack) = TransparentPlan.route(
                resolution: answer(["10.1.1.1", "10.9.9.9"], source), original: original, http: true, fallback: .original)
            #expect(route == .http)
            #expect(!hijack)
        }
        // An IPv4-mapped original destination (dual-stack listener) is the same address.
        let mapped = try! SocketAddress(ipAddress: "::ffff:10.9.9.9", port: 443)
        #expect(!TransparentPlan.route(resolution: answer(["10.9.9.9"]), original: mapped, http: false, fallback: .original).hijack)
    }

    @Test func systemAnswersAreNoEvidence() {
        // The configured provider is the system resolver: relayed by name, no hijack counted.
        let (route, hijack) = TransparentPlan.route(resolution: answer(["10.1.1.1"], .system), original: original, http: false, fallback: .refuse)
        #expect(route == .relayByName)
        #expect(!hijack)
    }

    @Test func noAnswerFallsBackOrRefuses() {
        for resolution in [nil, answer([]), answer(["10.1.1.1"], .fallback)] {
            #expect(TransparentPlan.route(resolution: resolution, original: original, http: false, fallback: .original) == (.original, false))
            #expect(TransparentPlan.route(resolution: resolution, original: original, http: true, fallback: .refuse) == (.refuse, false))
        }
    }

    /// The head as the client reader hands it on: parsed by the codec.
    func head(_ uri: String, hosts: [String], method: HTTPMethod = .GET) -> RequestHead {
        var text = "\(method.rawValue) \(uri) HTTP/1.1\r\n"
        for host in hosts { text += "Host: \(host)\r\n" }
        var decoder = MessageDecoder(role: .request)
        var buffer = ByteBuffer(string: text + "\r\n")
        guard case .head(let parsed) = try? decoder.next(&buffer) else { fatalError("the codec refused \(text)") }
        return RequestHead(parsed: parsed)
    }

    @Test func originFormBecomesAbsoluteByItsOwnHost() {
        let absolute = TransparentRequestTargetHandler.absoluteTarget
        #expect(absolute(head("/a?b", hosts: ["origin.test"]), 80) == "http://origin.test/a?b")
        #expect(absolute(head("/", hosts: ["origin.test"]), 8000) == "http://origin.test:8000/")
        #expect(absolute(head("/", hosts: ["origin.test:81"]), 8000) == "http://origin.test:81/")
        #expect(absolute(head("/", hosts: ["[::1]"]), 8000) == "http://[::1]:8000/")
        #expect(absolute(head("/", hosts: ["[::1]:9"]), 8000) == "http://[::1]:9/")
        #expect(absolute(head("/", hosts: ["10.0.0.1"]), 80) == "http://10.0.0.1/")
    }

    @Test func unusableHostsLeaveTheTargetAlone() {
        let absolute = TransparentRequestTargetHandler.absoluteTarget
        #expect(absolute(head("/", hosts: []), 80) == nil)
        #expect(absolute(head("/", hosts: ["a.test", "b.test"]), 80) == nil)
        #expect(absolute(head("/", hosts: ["a.test@evil.test"]), 80) == nil)
        #expect(absolute(head("/", hosts: ["a.test/x"]), 80) == nil)
        #expect(absolute(head("http://a.test/", hosts: ["b.test"]), 80) == nil)
        #expect(absolute(head("a.test:443", hosts: ["a.test"], method: .CONNECT), 80) == nil)
    }
}

@Suite struct TransparentRulesTests {
    @Test func redirectsThePortsAndExemptsLoopbackTheProxyAndExcludedBlocks() {
        let rules = TransparentRules(
            listenerPort: 15001, ports: [80, 443], proxyUID: 10001, mark: 0x2A,
            excluded: [CIDR("10.96.0.0/12")!, CIDR("fd00::/8")!], ipv6: true, blockQUIC: false)
        let lines = rules.install.filter { !$0.mayFail }.map(\.line)
        #expect(lines == [
            "iptables -w -t nat -N HTTPDNS_PROXY_REDIRECT",
            "iptables -w -t nat -A HTTPDNS_PROXY_REDIRECT -o lo -j RETURN",
            "iptables -w -t nat -A HTTPDNS_PROXY_REDIRECT -d 127.0.0.0/8 -j RETURN",
            "iptables -w -t nat -A HTTPDNS_PROXY_REDIRECT -m owner --uid-owner 10001 -j RETURN",
            "iptables -w -t nat -A HTTPDNS_PROXY_REDIRECT -m mark --mark 42 -j RETURN",
            "iptables -w -t nat -A HTTPDNS_PROXY_REDIRECT -d 10.96.0.0/12 -j RETURN",
            "iptables -w -t nat -A HTTPDNS_PROXY_REDIRECT -p tcp -m multiport --dports 80,443 -j REDIRECT --to-ports 15001",
            "iptables -w -t nat -A OUTPUT -p tcp -j HTTPDNS_PROXY_REDIRECT",
            "ip6tables -w -t nat -N HTTPDNS_PROXY_REDIRECT",
            "ip6tables -w -t nat -A HTTPDNS_PROXY_REDIRECT -o lo -j RETURN",
            "ip6tables -w -t nat -A HTTPDNS_PROXY_REDIRECT -d ::1/128 -j RETURN",
            "ip6tables -w -t nat -A HTTPDNS_PROXY_REDIRECT -m owner --uid-owner 10001 -j RETURN",
            "ip6tables -w -t nat -A HTTPDNS_PROXY_REDIRECT -m mark --mark 42 -j RETURN",
            "ip6tables -w -t nat -A HTTPDNS_PROXY_REDIRECT -d fd00::/8 -j RETURN",
            "ip6tables -w -t nat -A HTTPDNS_PROXY_REDIRECT -p tcp -m multiport --dports 80,443 -j REDIRECT --to-ports 15001",
            "ip6tables -w -t nat -A OUTPUT -p tcp -j HTTPDNS_PROXY_REDIRECT",
        ])
        // Removal of an earlier run comes first and may fail (nothing to remove the first time).
        #expect(rules.install.prefix(rules.removal.count).allSatisfy { $0.mayFail })
        #expect(rules.removal.first?.line == "iptables -w -t nat -D OUTPUT -p tcp -j HTTPDNS_PROXY_REDIRECT 2>/dev/null || true")
    }

    @Test func theProxysOwnTrafficMustBeExemptAndNotAllOfRoots() {
        #expect(TransparentRules(listenerPort: 15001, proxyUID: nil).problem?.contains("give --proxy-uid") == true)
        #expect(TransparentRules(listenerPort: 15001, proxyUID: 0).problem?.contains("--proxy-uid 0 would exempt all of root's traffic") == true)
        #expect(TransparentRules(listenerPort: 15001, proxyUID: 0, mark: 0x100).problem == nil)
        #expect(TransparentRules(listenerPort: 15001, proxyUID: nil, mark: 0x100).problem == nil)
        #expect(TransparentRules(listenerPort: 15001, proxyUID: 10001).problem == nil)
    }

    @Test func quicBlockAndIPv4Only() {
        let rules = TransparentRules(listenerPort: 15001, ports: [443], proxyUID: nil, ipv6: false, blockQUIC: true)
        let lines = rules.install.filter { !$0.mayFail }.map(\.line)
        #expect(!lines.contains { $0.hasPrefix("ip6tables") })
        #expect(!lines.contains { $0.contains("--uid-owner") })
        #expect(lines.contains("iptables -w -t filter -A HTTPDNS_PROXY_QUIC -p udp --dport 443 -j REJECT"))
        #expect(lines.last == "iptables -w -t filter -A OUTPUT -p udp -j HTTPDNS_PROXY_QUIC")
    }
}

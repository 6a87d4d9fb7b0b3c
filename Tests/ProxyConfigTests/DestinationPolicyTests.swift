import Testing
@testable import ProxyConfig

@Suite struct DestinationPolicyTests {
    private func reason(_ text: String, policy: DestinationPolicy = DestinationPolicy()) -> String? {
        guard case .denied(let reason) = policy.evaluate(IPAddress(text)!) else { return nil }
        return reason
    }

    @Test(arguments: [
        ("127.0.0.1", "a loopback address"), ("127.255.0.9", "a loopback address"), ("::1", "a loopback address"),
        ("10.0.0.1", "a private (RFC 1918) address"), ("172.16.5.4", "a private (RFC 1918) address"),
        ("172.31.255.255", "a private (RFC 1918) address"), ("192.168.1.1", "a private (RFC 1918) address"),
        ("fc00::1", "a private (unique local) address"), ("fd12:3456::1", "a private (unique local) address"),
        ("169.254.169.254", "a link-local address"), ("fe80::1", "a link-local address"),
        ("100.64.0.1", "a carrier-grade NAT (CGNAT) address"), ("100.127.255.255", "a carrier-grade NAT (CGNAT) address"),
        ("0.0.0.0", "an unspecified address"), ("0.1.2.3", "an unspecified address"), ("::", "an unspecified address"),
        ("224.0.0.1", "a multicast address"), ("239.255.255.250", "a multicast address"), ("ff02::1", "a multicast address"),
        ("255.255.255.255", "the broadcast address"),
    ])
    func deniesEachBuiltInClass(address: String, phrase: String) {
        let ip = IPAddress(address)!
        #expect(reason(address) == "\(ip) is \(phrase) (allow it with --allow-destination)")
    }

    @Test func loopbackReasonMatchesDocumentedWording() {
        #expect(reason("127.0.0.1") == "127.0.0.1 is a loopback address (allow it with --allow-destination)")
    }

    @Test(arguments: ["93.184.216.34", "2606:4700::1", "8.8.8.8", "172.32.0.1", "100.128.0.1", "11.0.0.1", "2001:db8::1", "::ffff:93.184.216.34", "223.255.255.255"])
    func allowsPublicAddresses(address: String) {
        #expect(DestinationPolicy().evaluate(IPAddress(address)!) == .allowed)
    }

    @Test func mappedIPv6IsJudgedAsItsIPv4() {
        #expect(reason("::ffff:127.0.0.1") == "::ffff:127.0.0.1 (IPv4-mapped 127.0.0.1) is a loopback address (allow it with --allow-destination)")
        #expect(reason("::ffff:10.0.0.1") != nil)
        #expect(reason("::ffff:169.254.169.254") != nil)
    }

    @Test func allowListOverridesDeniedRanges() {
        let policy = DestinationPolicy(allow: [CIDR("127.0.0.0/8")!, CIDR("fd00::/8")!, CIDR("10.1.0.0/16")!])
        #expect(policy.evaluate(IPAddress("127.0.0.1")!) == .allowed)
        #expect(policy.evaluate(IPAddress("::ffff:127.0.0.1")!) == .allowed)
        #expect(policy.evaluate(IPAddress("fd00::5")!) == .allowed)
        #expect(policy.evaluate(IPAddress("10.1.200.3")!) == .allowed)
        // Only what was allowed: neighbours stay denied.
        #expect(reason("10.2.0.1", policy: policy) != nil)
        #expect(reason("fc00::1", policy: policy) != nil)
        #expect(reason("::1", policy: policy) != nil)
    }

    @Test func everyBuiltInRangeParsedAndNamed() {
        let names = Set(DestinationPolicy.deniedRanges.map(\.name))
        #expect(names == ["loopback", "private", "link-local", "CGNAT", "unspecified", "multicast", "broadcast"])
        #expect(DestinationPolicy.deniedRanges.count == 14)
    }

    @Test func configurationBuildsPolicyFromAllowList() {
        var config = ProxyConfiguration.defaults
        #expect(config.destinationPolicy.evaluate(IPAddress("10.0.0.1")!) != .allowed)
        config.allowDestinations = [CIDR("10.0.0.0/8")!]
        #expect(config.destinationPolicy.evaluate(IPAddress("10.0.0.1")!) == .allowed)
    }
}

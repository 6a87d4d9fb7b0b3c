@testable import DNSListener
import HTTPDNS
import NIOCore
import ProxyConfig
@testable import ProxyUpstream
import Testing

/// The DNS listener's pure parts: the per-client rate limit, routing, resolv.conf.
@Suite struct DNSListenerUnitTests {
    private let start = ContinuousClock.now
    private let a = IPAddress("192.0.2.1")!
    private let b = IPAddress("192.0.2.2")!

    /// How many of `count` queries from `client` at `now` the limiter lets through.
    private func allowed(_ limiter: inout DNSRateLimiter<ContinuousClock.Instant>, _ client: IPAddress, _ count: Int, at now: ContinuousClock.Instant) -> Int {
        var passed = 0
        for _ in 0..<count where limiter.allow(client, now: now) { passed += 1 }
        return passed
    }

    /// A stale answer's TTL: RFC 8767's 30 s at most, never longer than the answer's own TTL, so a
    /// tier below asks again as soon as the refresh the stale hit started can have finished.
    @Test func staleAnswersCarryTheirOwnTTLUpToThirtySeconds() {
        func answer(_ seconds: Int) -> ResolvedAnswer { ResolvedAnswer(ipv4: ["192.0.2.1"], ipv6: [], ttl: .seconds(seconds)) }
        #expect(DNSResponder.staleTTL(of: answer(2)) == 2)
        #expect(DNSResponder.staleTTL(of: answer(300)) == 30)
        #expect(DNSResponder.staleTTL(of: answer(0)) == 1)
    }

    @Test func rateLimitAllowsABurstThenTheRatePerClient() {
        var limiter = DNSRateLimiter<ContinuousClock.Instant>(rate: 10)
        #expect(allowed(&limiter, a, 25, at: start) == 10)
        // Another client is not affected.
        #expect(allowed(&limiter, b, 1, at: start) == 1)
        // Half a second later: five more tokens.
        #expect(allowed(&limiter, a, 25, at: start + .milliseconds(500)) == 5)
        // Long idle: the bucket is full again, never fuller.
        #expect(allowed(&limiter, a, 25, at: start + .seconds(3600)) == 10)
    }

    @Test func rateLimitTableStaysBounded() {
        var limiter = DNSRateLimiter<ContinuousClock.Instant>(rate: 1, capacity: 100)
        for index in 0..<1000 {
            _ = limiter.allow(IPAddress(bytes: [10, 0, UInt8(index / 256), UInt8(index % 256)])!, now: start)
            #expect(limiter.buckets.count <= 100)
        }
    }

    private func query(_ name: String, type: UInt16, qclass: UInt16 = 1) throws -> DNSQuery {
        var bytes: [UInt8] = [0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") {
            bytes.append(UInt8(label.utf8.count))
            bytes += Array(label.utf8)
        }
        bytes += [0, UInt8(type >> 8), UInt8(type & 0xFF), UInt8(qclass >> 8), UInt8(qclass & 0xFF)]
        return try DNSQuery.parse(bytes)
    }

    @Test func routesAddressQuestionsToTheCacheAndTheRestUpstream() throws {
        let routing = DNSRouting(
            forwardZones: try DNSForwardZones(parsing: ["cluster.local"]), systemOnly: try SystemDNSDomains(parsing: ["corp.example"]),
            hasCache: true)
        #expect(routing.route(try query("WWW.example.com", type: 1)) == .cache(name: "www.example.com", family: .a))
        #expect(routing.route(try query("www.example.com", type: 28)) == .cache(name: "www.example.com", family: .aaaa))
        #expect(routing.route(try query("www.example.com", type: 16)) == .forward)
        #expect(routing.route(try query("www.example.com", type: 1, qclass: 3)) == .forward)
        #expect(routing.route(try query("kube-dns.kube-system.svc.cluster.local", type: 1)) == .forward)
        #expect(routing.route(try query("git.corp.example", type: 1)) == .forward)
        #expect(routing.route(try query("printer", type: 1)) == .forward)
        let systemOnly = DNSRouting(forwardZones: DNSForwardZones(), systemOnly: SystemDNSDomains(), hasCache: false)
        #expect(systemOnly.route(try query("www.example.com", type: 1)) == .forward)
    }

    /// `zone=IP[:PORT]`: the most specific zone with resolvers of its own takes its names, of any
    /// type; a bare zone and names outside every zone keep the default upstreams.
    @Test func zonesWithResolversOfTheirOwnRouteTheirNames() throws {
        let zones = try DNSForwardZones(parsing: [
            "cluster.local", "corp.example=10.0.0.53", "corp.example=[fd00::53]:5353", "eu.corp.example=10.1.0.53:53",
        ])
        #expect(zones.upstreams["corp.example"] == [HostPort(host: "10.0.0.53", port: 53), HostPort(host: "fd00::53", port: 5353)])
        #expect(zones.description == "[cluster.local, corp.example=10.0.0.53:53, corp.example=[fd00::53]:5353, eu.corp.example=10.1.0.53:53]")
        let routing = DNSRouting(forwardZones: zones, systemOnly: SystemDNSDomains(), hasCache: true)
        #expect(routing.route(try query("git.Corp.Example", type: 1)) == .forward(zone: "corp.example"))
        #expect(routing.route(try query("db.eu.corp.example", type: 33)) == .forward(zone: "eu.corp.example"))
        #expect(routing.route(try query("api.svc.cluster.local", type: 1)) == .forward(zone: nil))
        #expect(routing.route(try query("www.example.com", type: 16)) == .forward(zone: nil))
        #expect(routing.route(try query("www.example.com", type: 1)) == .cache(name: "www.example.com", family: .a))
        for bad in ["corp.example=", "corp.example=resolver.corp", "corp.example=10.0.0.53:0", "=10.0.0.53"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try DNSForwardZones(parsing: [bad]) }
        }
    }

    @Test func resolvConfGivesNameserversWithoutTheListenerItself() {
        let text = """
            # comment
            search default.svc.cluster.local
            nameserver 10.96.0.10
            nameserver   fe80::1%eth0
            nameserver 127.0.0.1
            nameserver 10.96.0.10
            nameserver not-an-address
            options ndots:5
            """
        let servers = ResolvConf.nameservers(text)
        #expect(servers == [HostPort(host: "10.96.0.10", port: 53), HostPort(host: "127.0.0.1", port: 53)])
        #expect(ResolvConf.excludingListener(servers, listener: HostPort(host: "127.0.0.1", port: 53)) == [HostPort(host: "10.96.0.10", port: 53)])
        #expect(ResolvConf.excludingListener(servers, listener: HostPort(host: "0.0.0.0", port: 53)) == [HostPort(host: "10.96.0.10", port: 53)])
        #expect(ResolvConf.excludingListener(servers, listener: HostPort(host: "127.0.0.1", port: 5353)) == servers)
    }

    @Test func healthOrderingPutsADeadAddressLast() {
        let health = IPHealthRegistry()
        let ips = ["192.0.2.1", "192.0.2.2", "192.0.2.3"]
        #expect(health.ordered(ips: ips, preferringPort: 443) == ips)
        health.recordFailure(UpstreamEndpoint(ip: "192.0.2.1", port: 443), kind: .refused)
        #expect(health.ordered(ips: ips, preferringPort: 443) == ["192.0.2.2", "192.0.2.3", "192.0.2.1"])
    }

    @Test func anIPKnownOnlyOnOtherPortsIsJudgedOnTheBestOfThem() {
        let health = IPHealthRegistry()
        let ips = ["192.0.2.1", "192.0.2.2", "192.0.2.3"]
        // Dialled only on port 80 (plain HTTP), and refused there: the host goes last.
        health.recordFailure(UpstreamEndpoint(ip: "192.0.2.1", port: 80), kind: .timeout)
        #expect(health.ordered(ips: ips, preferringPort: 443) == ["192.0.2.2", "192.0.2.3", "192.0.2.1"])
        // One closed port while another answers: the host is up, it keeps its place.
        health.recordSuccess(UpstreamEndpoint(ip: "192.0.2.1", port: 8443), connectTime: .milliseconds(5))
        #expect(health.ordered(ips: ips, preferringPort: 443).first == "192.0.2.1")
        // A known 443 wins over the other ports, either way.
        health.recordFailure(UpstreamEndpoint(ip: "192.0.2.1", port: 443), kind: .refused)
        #expect(health.ordered(ips: ips, preferringPort: 443) == ["192.0.2.2", "192.0.2.3", "192.0.2.1"])
        health.recordFailure(UpstreamEndpoint(ip: "192.0.2.2", port: 80), kind: .refused)
        health.recordSuccess(UpstreamEndpoint(ip: "192.0.2.2", port: 443), connectTime: .milliseconds(9))
        #expect(health.ordered(ips: ips, preferringPort: 443) == ["192.0.2.2", "192.0.2.3", "192.0.2.1"])
        health.reset()
        #expect(health.ordered(ips: ips, preferringPort: 443) == ips)
    }

    @Test func thePortIndexFollowsEvictionAndReset() {
        var table = IPHealthTable(configuration: .init(capacity: 2))
        let now = NIODeadline.now()
        table.recordFailure(UpstreamEndpoint(ip: "192.0.2.1", port: 80), kind: .refused, now: now)
        table.recordFailure(UpstreamEndpoint(ip: "192.0.2.2", port: 80), kind: .refused, now: now)
        #expect(table.ordered(ips: ["192.0.2.1", "192.0.2.3"], preferringPort: 443, now: now) == ["192.0.2.3", "192.0.2.1"])
        // A third endpoint evicts the least recently used one, 192.0.2.1:80: nothing is known of it any more.
        table.recordSuccess(UpstreamEndpoint(ip: "192.0.2.3", port: 443), connectTime: .milliseconds(1))
        #expect(table.portsByIP["192.0.2.1"] == nil)
        #expect(table.portsByIP["192.0.2.2"] == [80])
        #expect(table.ordered(ips: ["192.0.2.1", "192.0.2.2"], preferringPort: 443, now: now) == ["192.0.2.1", "192.0.2.2"])
        table.reset()
        #expect(table.portsByIP.isEmpty)
    }
}

import HTTPDNS
import Testing

@Suite struct ResolverServersTests {
    @Test func rotatesPastAFailedServerAndRemembersTheGoodOne() {
        let servers = ResolverServers(ips: ["a", "b", "c"])
        #expect(servers.admit() == .go(["a", "b", "c"]))
        #expect(!servers.failed(ip: "a"))
        #expect(servers.admit() == .go(["b", "c", "a"]))
        servers.succeeded(ip: "c")
        #expect(servers.admit() == .go(["c", "a", "b"]))
    }

    @Test func aWholeFailedRotationBacksOffAndAllowsOneProbeLater() {
        let clock = ManualInstant()
        let servers = ResolverServers(ips: ["a", "b"], backoff: .seconds(30), now: { clock.now })
        #expect(!servers.failed(ip: "a"))
        #expect(servers.failed(ip: "b"))
        #expect(servers.admit() == .backingOff)
        clock.advance(by: .seconds(29))
        #expect(servers.admit() == .backingOff)
        clock.advance(by: .seconds(2))
        guard case .go = servers.admit() else {
            Issue.record("the probe must be admitted")
            return
        }
        // Only one probe at a time.
        #expect(servers.admit() == .backingOff)
        // A failed probe backs off again.
        #expect(servers.failed(ip: nil))
        #expect(servers.admit() == .backingOff)
        clock.advance(by: .seconds(31))
        guard case .go = servers.admit() else {
            Issue.record("the next probe must be admitted")
            return
        }
        servers.succeeded(ip: "a")
        #expect(servers.admit() == .go(["a", "b"]))
        #expect(!servers.isBackingOff)
    }
}

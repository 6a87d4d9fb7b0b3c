import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import ProxyConfig
import Testing

@testable import ProxyKit
@testable import ProxyUpstream

/// `route` in the connector, the one place every dial passes (HTTP, CONNECT, SOCKS, transparent):
/// a denied destination fails before the resolver is asked; a reload's rules apply to the next dial.
@Suite struct UpstreamConnectorRouteTests {
    /// Counts the names it is asked for; answers 10.0.0.1, which the default policy denies (so a
    /// dial ends there, after resolution, without a socket).
    final class CountingResolver: UpstreamResolver, Sendable {
        let asked = NIOLockedValueBox<[String]>([])
        func resolve(host: String, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution> {
            asked.withLockedValue { $0.append(host) }
            return eventLoop.makeSucceededFuture(Resolution(addresses: [try! SocketAddress(ipAddress: "10.0.0.1", port: port)], source: .httpdns))
        }
    }

    static let rules = try! ["api.corp.test=direct", ".corp.test=deny", "198.51.100.0/24=deny"].map { try RouteRule(parsing: $0) }

    func outcome(_ connector: UpstreamConnector, _ host: String, on loop: EmbeddedEventLoop) -> ProxyError? {
        var failure: ProxyError?
        connector.connect(host: host, port: 443, on: loop) { $0.eventLoop.makeSucceededVoidFuture() }.whenFailure { failure = $0 as? ProxyError }
        loop.run()
        return failure
    }

    @Test func theFirstMatchingRuleDecidesBeforeResolution() throws {
        let loop = EmbeddedEventLoop()
        let resolver = CountingResolver()
        let policy = DestinationPolicy()
        let connector = UpstreamConnector(resolver: resolver, policy: policy, connectTimeout: .seconds(5), routes: Self.rules)

        let denied = try #require(outcome(connector, "www.corp.test", on: loop))
        #expect(denied.kind == .routeDenied && denied.status == .forbidden)
        #expect(denied.message == "connections to www.corp.test are denied by route rule 2 (corp.test=deny; see --route)")
        let literal = try #require(outcome(connector, "198.51.100.7", on: loop))
        #expect(literal.kind == .routeDenied && literal.message.contains("route rule 3"))
        #expect(resolver.asked.withLockedValue { $0 }.isEmpty, "nothing resolved for a denied destination")

        // Rule 1 (direct) and no rule: resolved, then judged by the destination policy as usual.
        for host in ["api.corp.test", "origin.test"] {
            #expect(outcome(connector, host, on: loop)?.kind == .destinationDenied, "\(host)")
        }
        #expect(resolver.asked.withLockedValue { $0 } == ["api.corp.test", "origin.test"])

        // A reload without rules: the next dial of the denied name is resolved.
        connector.update(.init(policy: policy, connectTimeout: .seconds(5), tlsContext: nil, routes: []))
        #expect(outcome(connector, "www.corp.test", on: loop)?.kind == .destinationDenied)
        #expect(resolver.asked.withLockedValue { $0 }.last == "www.corp.test")
    }
}

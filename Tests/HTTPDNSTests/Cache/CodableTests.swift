#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing

@testable import HTTPDNS

enum JSONRoundTrip {
    static func roundTrip<T: Codable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
    }
}

@Suite struct CodableTests {
    @Test func answersEncodeTheirTTLInSeconds() throws {
        let answer = ResolvedAnswer(ipv4: ["192.0.2.1"], ipv6: ["2001:db8::1"], ttl: .milliseconds(1500), serverIP: "203.0.113.1")
        let json = try #require(String(bytes: JSONEncoder().encode(answer), encoding: .utf8))
        #expect(json.contains("\"ttl\":1.5"))
        #expect(try JSONRoundTrip.roundTrip(answer) == answer)
    }

    @Test func snapshotsRoundTrip() throws {
        let snapshot = CacheEntrySnapshot(
            name: "a.example", ipv4: [], ipv6: [], ttl: .seconds(30), remaining: .seconds(-4),
            negative: .noData, hits: 3, stale: false, refreshing: true, serverIP: nil
        )
        #expect(try JSONRoundTrip.roundTrip(snapshot) == snapshot)
    }

    @Test func failureLabelsAreBounded() {
        #expect(ResolveFailure(kind: .noData, message: "no AAAA for secret.example").shortDescription == "no_data")
        #expect(ResolveFailure(CancellationError()).kind == .cancelled)
        struct Other: Error {}
        #expect(ResolveFailure(Other()).kind == .network)
    }
}

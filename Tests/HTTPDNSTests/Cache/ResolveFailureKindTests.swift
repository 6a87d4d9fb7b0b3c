import Foundation
import Testing

@testable import HTTPDNS

/// `ResolveFailure.Kind` is a struct around a private code: labels are bounded, and the cache
/// file keeps the same JSON as when it was an enum (its label as a string).
@Suite struct ResolveFailureKindTests {
    @Test func labelsAreTheBoundedSnakeCaseNames() {
        #expect(ResolveFailure.Kind.all.map(\.description) == ["nxdomain", "no_data", "timeout", "network", "server", "auth", "malformed", "cancelled"])
        #expect(ResolveFailure(kind: .noData, message: "x").shortDescription == "no_data")
    }

    @Test func persistsAsItsLabel() throws {
        let data = try JSONEncoder().encode([ResolveFailure.Kind.noData])
        #expect(String(decoding: data, as: UTF8.self) == "[\"no_data\"]")
        #expect(try JSONDecoder().decode([ResolveFailure.Kind].self, from: Data("[\"nxdomain\"]".utf8)) == [.nxdomain])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([ResolveFailure.Kind].self, from: Data("[\"bogus\"]".utf8)) }
    }
}

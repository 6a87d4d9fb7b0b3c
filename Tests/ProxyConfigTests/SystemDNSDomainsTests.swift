import Testing
@testable import ProxyConfig

@Suite struct SystemDNSDomainsTests {
    @Test func namesUnderASuffixAndSingleLabelsMatch() throws {
        let domains = try SystemDNSDomains(parsing: ["cluster.local", ".Internal", "svc", "cluster.local"])
        #expect(domains.suffixes == ["cluster.local", "internal", "svc"])
        for host in ["my-svc.my-ns.svc.cluster.local", "cluster.local", "DB.Corp.Internal.", "a.svc", "my-svc", "localhost"] {
            #expect(domains.matches(host), "\(host)")
        }
        for host in ["example.com", "notcluster.local", "cluster.local.example.com", "internal.example", "127.0.0.1", "::1", ""] {
            #expect(!domains.matches(host), "\(host)")
        }
    }

    @Test func withoutSuffixesNothingMatchesNotEvenSingleLabels() {
        #expect(!SystemDNSDomains().matches("localhost"))
        #expect(!SystemDNSDomains().matches("a.cluster.local"))
    }

    @Test func wildcardsAndBadNamesAreRejected() {
        for bad in ["*.cluster.local", "bad..name", "10.0.0.1", "a b"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try SystemDNSDomains(parsing: [bad]) }
        }
    }
}

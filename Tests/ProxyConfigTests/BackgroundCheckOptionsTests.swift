import Testing

@testable import ProxyConfig

/// `compare-system-dns`, `compare-rate` and `probe-domains`.
@Suite struct BackgroundCheckOptionsTests {
    @Test func theDefaultsAreOffOnePerSecondAndNoProbes() throws {
        let config = try load()
        #expect(config.compareSystemDNS == false)
        #expect(config.compareRate == 1)
        #expect(config.probeDomains.isEmpty)
    }

    @Test func aBareCompareSystemDNSFlagMeansTrue() throws {
        #expect(try flags(["--compare-system-dns"]) == ["compare-system-dns": ["true"]])
        #expect(try flags(["--compare-system-dns", "--compare-rate", "0.5"])
            == ["compare-system-dns": ["true"], "compare-rate": ["0.5"]])
        #expect(try load(flags: flags(["--compare-system-dns"])).compareSystemDNS)
    }

    @Test func theRateIsABoundedPlainNumber() throws {
        #expect(try load(env: ["HTTPDNS_PROXY_COMPARE_RATE": "0.2"]).compareRate == 0.2)
        #expect(try load(flags: ["compare-rate": ["100"]]).compareRate == 100)
        for bad in ["0", "0.001", "101", "-1", "1e2", "nan", "inf", "fast", "1,5"] {
            let error = loadError(flags: ["compare-rate": [bad]])
            #expect(error != nil, "\(bad)")
            #expect(error?.description.contains("expected a number 0.01...100") == true, "\(String(describing: error))")
        }
    }

    @Test func probeDomainsTakeNamesWithOptionalPortsWithoutDuplicates() throws {
        let config = try load(env: ["HTTPDNS_PROXY_PROBE_DOMAINS": "api.example.com, CDN.example.com:8443,api.example.com:443"])
        #expect(config.probeDomains == [ProbeTarget(host: "api.example.com"), ProbeTarget(host: "cdn.example.com", port: 8443)])
        let error = loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "probe-domains: [192.0.2.1]\n"])
        #expect(error?.description.contains("IP address") == true, "\(String(describing: error))")
    }
}

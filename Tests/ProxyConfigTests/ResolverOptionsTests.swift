import NIOCore
import Testing
@testable import ProxyConfig

@Suite struct ResolverOptionsTests {
    private static let aliDNS = [IPAddress("223.5.5.5")!, IPAddress("223.6.6.6")!]
    private static let alibabaIPs = ["203.107.1.1", "203.107.1.97", "203.107.1.100", "203.119.238.240", "106.11.25.239", "59.82.99.47"]
        .map { IPAddress($0)! }

    @Test(arguments: [
        (["provider": ["json"]], "https://dns.alidns.com/resolve"),
        (["provider": ["doh"]], "https://dns.alidns.com/dns-query"),
        (["provider": ["alibaba"], "account-id": ["139450"]], "https://resolvers.httpdns.aliyuncs.com"),
        (["provider": ["system"]], nil),
        (["provider": ["static"], "static-list": ["/etc/list.json"]], nil),
    ] as [([String: [String]], String?)])
    func perProviderDefaultURL(flags: [String: [String]], url: String?) throws {
        let config = try load(flags: flags)
        #expect(config.resolverURL == nil)
        #expect(config.effectiveResolverURL == url)
    }

    @Test func perProviderDefaultIPs() throws {
        #expect(try load().effectiveResolverIPs == Self.aliDNS)
        #expect(try load(flags: ["provider": ["doh"]]).effectiveResolverIPs == Self.aliDNS)
        #expect(try load(flags: ["provider": ["alibaba"], "account-id": ["1"]]).effectiveResolverIPs == Self.alibabaIPs)
        #expect(try load(flags: ["provider": ["system"]]).effectiveResolverIPs == [])
        #expect(ProviderKind.json.defaultResolverIPs == Self.aliDNS)
        #expect(ProviderKind.alibaba.defaultResolverIPs == Self.alibabaIPs)
    }

    @Test func explicitResolverURLAndIPs() throws {
        // A URL on the default host keeps the default pins; given IPs replace them.
        let sameHost = try load(flags: ["resolver-url": ["https://DNS.alidns.com/resolve?short=0"]])
        #expect(sameHost.effectiveResolverURL == "https://DNS.alidns.com/resolve?short=0")
        #expect(sameHost.effectiveResolverIPs == Self.aliDNS)
        let pinned = try load(flags: ["resolver-url": ["https://doh.example.net/resolve"], "resolver-ip": ["192.0.2.53", "2001:db8::53"]])
        #expect(pinned.effectiveResolverURL == "https://doh.example.net/resolve")
        #expect(pinned.effectiveResolverIPs == [IPAddress("192.0.2.53")!, IPAddress("2001:db8::53")!])
        // Another host without pins is found through system DNS: the defaults would point elsewhere.
        #expect(try load(flags: ["resolver-url": ["https://doh.example.net/resolve"]]).effectiveResolverIPs == [])
        // An IP-literal URL needs no pins, even when some are given.
        let literal = try load(flags: ["provider": ["doh"], "resolver-url": ["https://[2400:3200::1]/dns-query"], "resolver-ip": ["192.0.2.1"]])
        #expect(literal.effectiveResolverIPs == [])
        // alibaba: a custom root on the default host keeps its six bootstrap IPs.
        let alibaba = try load(flags: ["provider": ["alibaba"], "account-id": ["1"], "resolver-url": ["http://resolvers.httpdns.aliyuncs.com"]])
        #expect(alibaba.effectiveResolverIPs == Self.alibabaIPs)
    }

    @Test func staticListIPsPinTheListURL() throws {
        let byURL = try load(flags: ["provider": ["static"], "static-list": ["https://lists.example.com/a.json"], "resolver-ip": ["192.0.2.7"]])
        #expect(byURL.effectiveResolverIPs == [IPAddress("192.0.2.7")!])
        #expect(byURL.staticListSource == .url(try HTTPServiceURL(parsing: "https://lists.example.com/a.json")))
        let byFile = try load(flags: ["provider": ["static"], "static-list": ["/etc/httpdns-proxy/list.json"], "resolver-ip": ["192.0.2.7"]])
        #expect(byFile.effectiveResolverIPs == [])
        #expect(byFile.staticListSource == .file(path: "/etc/httpdns-proxy/list.json"))
        #expect(byFile.effectiveResolverURL == nil)
    }

    @Test func alibabaNeedsAccountID() throws {
        let error = try #require(loadError(flags: ["provider": ["alibaba"]]))
        #expect(error.description == "invalid configuration: --provider alibaba (from command-line flag --provider) needs the Alibaba Cloud HTTPDNS account ID: "
            + "set --account-id (HTTPDNS_PROXY_ACCOUNT_ID, or account-id in the config file)")
        #expect(loadError(flags: ["provider": ["alibaba"]], env: ["HTTPDNS_PROXY_ACCOUNT_ID": "139450"]) == nil)
        // Other providers do not need it.
        #expect(loadError(flags: ["provider": ["json"]]) == nil)
    }

    @Test func staticNeedsAList() throws {
        let error = try #require(loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "provider: static"]))
        #expect(error.description == "invalid configuration: --provider static (from config file p.yaml, key provider) needs the domain list: "
            + "set --static-list (HTTPDNS_PROXY_STATIC_LIST, or static-list in the config file) to an http(s) URL or a file path")
        #expect(loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "provider: static\nstatic-list: ./list.json"]) == nil)
    }

    @Test func jsonAndDoHUseTheirDefaultURL() {
        // "need a URL": the per-provider default counts, so no setting is required.
        #expect(loadError(flags: ["provider": ["json"]]) == nil)
        #expect(loadError(flags: ["provider": ["doh"]]) == nil)
    }

    @Test func dohSignatureNeedsAllThreeParts() throws {
        let one = try #require(loadError(env: ["HTTPDNS_PROXY_DOH_UID": "1234"]))
        #expect(one.description == "invalid configuration: the json request signature needs --doh-uid, --doh-access-key-id and --doh-access-key-secret together; "
            + "--doh-uid (from environment variable HTTPDNS_PROXY_DOH_UID) is set but --doh-access-key-id and --doh-access-key-secret are not")
        let two = try #require(loadError(flags: ["doh-access-key-id": ["ak"], "doh-access-key-secret": ["sk-value"]]))
        #expect(two.description.hasSuffix("--doh-access-key-id (from command-line flag --doh-access-key-id) and --doh-access-key-secret "
            + "(from command-line flag --doh-access-key-secret) are set but --doh-uid is not"))
        let all = try load(flags: ["doh-uid": ["1234"], "doh-access-key-id": ["ak"]], env: ["HTTPDNS_PROXY_DOH_ACCESS_KEY_SECRET": "sk-value"])
        #expect(all.dohSignature == DoHSignature(uid: "1234", accessKeyID: "ak", accessKeySecret: "sk-value"))
    }

    @Test func ipBackoffMaxMustBeAtLeastIPBackoff() throws {
        let error = try #require(loadError(flags: ["ip-backoff": ["10m"]]))
        #expect(error.description == "invalid configuration: --ip-backoff-max 5m (from defaults) "
            + "is less than --ip-backoff 10m (from command-line flag --ip-backoff)")
        let equal = try load(flags: ["ip-backoff": ["1m"]], env: ["HTTPDNS_PROXY_IP_BACKOFF_MAX": "60s"])
        #expect(equal.ipBackoff == .minutes(1) && equal.ipBackoffMax == .minutes(1))
    }

    @Test func maxTTLMustBeAtLeastMinTTL() throws {
        let error = try #require(loadError(flags: ["min-ttl": ["10m"]], env: ["HTTPDNS_PROXY_MAX_TTL": "5m"]))
        #expect(error.description == "invalid configuration: --max-ttl 5m (from environment variable HTTPDNS_PROXY_MAX_TTL) "
            + "is less than --min-ttl 10m (from command-line flag --min-ttl)")
        let defaultMax = try #require(loadError(flags: ["min-ttl": ["2h"]]))
        #expect(defaultMax.description.contains("--max-ttl 1h (from defaults)"))
        let equal = try load(flags: ["min-ttl": ["60s"], "max-ttl": ["1m"]])
        #expect(equal.minTTL == .minutes(1) && equal.maxTTL == .minutes(1))
    }

    @Test(arguments: ["0", "0s", "0ms", "0.0"])
    func zeroIsAllowedWhereItMeansOff(text: String) throws {
        let config = try load(env: ["HTTPDNS_PROXY_MIN_TTL": text, "HTTPDNS_PROXY_MAX_STALE": text])
        #expect(config.minTTL == .zero)
        #expect(config.maxStale == .zero)
        // ...but not for real timeouts.
        #expect(loadError(env: ["HTTPDNS_PROXY_RESOLVER_TIMEOUT": text]) != nil)
    }

    @Test func domainListsAreValidatedAndLowercased() throws {
        let config = try load(
            flags: ["config": ["p.yaml"]],
            files: ["p.yaml": "preload: [WWW.Example.com., api.example.com, www.example.com]\nkeepalive-domains: 'My_Service.Internal'"]
        )
        #expect(config.preload == ["www.example.com", "api.example.com"])
        #expect(config.keepaliveDomains == ["my_service.internal"])
    }

    @Test(arguments: [
        ("https://dns.alidns.com/resolve", true, "dns.alidns.com", 443, "/resolve"),
        ("HTTP://Resolver.Example:8053", false, "resolver.example", 8053, ""),
        ("https://[2400:3200:0::1]/dns-query?ct", true, "2400:3200::1", 443, "/dns-query?ct"),
        ("http://203.107.1.1?x=1", false, "203.107.1.1", 80, "?x=1"),
    ] as [(String, Bool, String, Int, String)])
    func serviceURLParts(text: String, https: Bool, host: String, port: Int, rest: String) throws {
        let url = try HTTPServiceURL(parsing: text)
        #expect(url.isHTTPS == https)
        #expect(url.host == host)
        #expect(url.port == port)
        #expect(url.pathAndQuery == rest)
        #expect(url.text == text)
        #expect((url.hostIPAddress != nil) == (IPAddress(host) != nil))
    }

    @Test(arguments: ["https://", "https://dns.example.com/#frag", "https://dns example.com/", "mailto:x@example.com", "https://[::1/"])
    func serviceURLRejects(text: String) {
        #expect(throws: ConfigurationError.self) { try HTTPServiceURL(parsing: text) }
    }
}

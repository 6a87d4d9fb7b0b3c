import Foundation
import ProxyConfig
import Testing
import TestSupport

/// `--pac-bypass` claims NO_PROXY syntax: the PAC file the binary serves, evaluated by pacparser,
/// must send DIRECT exactly what curl itself sends direct with `NO_PROXY` set to the same list; and
/// the proxy's own matcher (`DestinationPattern.matches`, which `--route` rules use) must agree.
///
/// curl's side is observed, not assumed: it runs with `http_proxy` pointing at a loopback stand-in
/// proxy and `--connect-to ::127.0.0.1:PORT`, so a direct request lands on a loopback stand-in
/// origin whatever the URL names (no name is ever resolved, nothing leaves the machine). Which of
/// the two answered tells what curl decided.
@Suite("PAC bypass agrees with curl's NO_PROXY", .onBlockingThreads, .timeLimit(.minutes(3)))
struct PACNoProxyAgreementTests {
    struct Case {
        var url: String
        /// The host as a browser hands it to `FindProxyForURL`.
        var host: String
    }

    static let names = [
        Case(url: "http://example.org/", host: "example.org"),
        Case(url: "http://www.example.org/", host: "www.example.org"),
        Case(url: "http://a.b.example.org/", host: "a.b.example.org"),
        Case(url: "http://WWW.Example.ORG/", host: "WWW.Example.ORG"),
        Case(url: "http://notexample.org/", host: "notexample.org"),
        Case(url: "http://example.org.other.test/", host: "example.org.other.test"),
        Case(url: "http://www.example.com/", host: "www.example.com"),
    ]
    static let literals = [
        Case(url: "http://10.1.2.3/", host: "10.1.2.3"),
        Case(url: "http://11.1.2.3/", host: "11.1.2.3"),
        Case(url: "http://[2001:db8::1]/", host: "2001:db8::1"),
        Case(url: "http://[2001:db8::2]/", host: "2001:db8::2"),
    ]

    /// "DIRECT" or "PROXY", as curl decided for `url` with `NO_PROXY=noProxy`.
    static func curlDecision(_ url: String, noProxy: String, proxy: TaggingHTTPServer, origin: TaggingHTTPServer) throws -> String {
        let result = try ExternalTool.run(
            try Curl.path(),
            ["-q", "-sS", "--max-time", "10", "--connect-to", "::127.0.0.1:\(origin.port)", url],
            timeout: .seconds(20),
            environment: ["http_proxy": "http://127.0.0.1:\(proxy.port)", "NO_PROXY": noProxy])
        switch result.stdout {
        case "origin": return "DIRECT"
        case "proxy": return "PROXY"
        default: throw ExternalTool.Failure(description: "curl \(url) with NO_PROXY=\(noProxy) reached neither stand-in (\(result.exitCode)): \(result.stderr)")
        }
    }

    @Test(.enabled(if: ExternalTool.shouldRun("pacparser (python3 -m pip install pacparser)", present: ExternalTool.hasPacparser)))
    func everyFormMeansWhatItMeansToCurl() async throws {
        #expect(ExternalTool.hasPacparser, "pacparser is missing: run scripts/ensure-deps.sh --with-test-tools")
        let standInProxy = try await TaggingHTTPServer.start(tag: "proxy")
        defer { standInProxy.stop() }
        let standInOrigin = try await TaggingHTTPServer.start(tag: "origin")
        defer { standInOrigin.stop() }

        // (the --pac-bypass list, the NO_PROXY list curl gets, the destinations)
        let forms: [(bypass: String, noProxy: String, cases: [Case])] = [
            ("example.org", "example.org", Self.names),
            (".example.org", ".example.org", Self.names),
            // curl has no "*." form (its only wildcard is a lone "*"); the proxy reads it like the
            // leading dot, so it is held to what curl does with ".example.org".
            ("*.example.org", ".example.org", Self.names),
            ("10.0.0.0/8", "10.0.0.0/8", Self.literals + [Self.names[1]]),
            ("2001:db8::1", "2001:db8::1", Self.literals + [Self.names[1]]),
            ("*", "*", Self.names + Self.literals),
            ("example.org,10.0.0.0/8", "example.org,10.0.0.0/8", Self.names + Self.literals),
        ]
        var table: [String] = []
        var direct = 0
        var proxied = 0
        for form in forms {
            let proxy = try ProxyProcess.launch(["--pac-bypass", form.bypass])
            defer { proxy.stop() }
            let pac = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/proxy.pac", proxy: nil)
            #expect(pac.status == 200, "\(proxy.diagnostics)")
            let answers = try PACFileEndToEndTests.evaluate(pac: pac.bodyText, cases: form.cases.map { ($0.url, $0.host) })
            for (item, answer) in zip(form.cases, answers) {
                let curl = try Self.curlDecision(item.url, noProxy: form.noProxy, proxy: standInProxy, origin: standInOrigin)
                let pacDecision = answer == "DIRECT" ? "DIRECT" : (answer.hasPrefix("PROXY ") ? "PROXY" : answer)
                #expect(pacDecision == curl, "--pac-bypass \(form.bypass): \(item.url) is \(answer) in the PAC file, \(curl) for curl (NO_PROXY=\(form.noProxy))")
                let patterns = try form.bypass.split(separator: ",").map { try DestinationPattern(parsing: String($0)) }
                let matcher = patterns.contains { $0.matches(host: item.host) } ? "DIRECT" : "PROXY"
                #expect(matcher == curl, "\(form.bypass): \(item.host) is \(matcher) for the route matcher, \(curl) for curl")
                if curl == "DIRECT" { direct += 1 } else { proxied += 1 }
                table.append("  \(form.bypass.padding(toLength: 24, withPad: " ", startingAt: 0)) \(item.host.padding(toLength: 24, withPad: " ", startingAt: 0)) pac=\(pacDecision) curl=\(curl)")
            }
        }
        // What curl itself does with "*.example.org", for the record (the docs say it).
        let literalStar = try Self.curlDecision("http://www.example.org/", noProxy: "*.example.org", proxy: standInProxy, origin: standInOrigin)
        print("PAC vs curl NO_PROXY (\(direct) direct, \(proxied) proxied by curl):\n" + table.joined(separator: "\n")
            + "\n  curl itself with NO_PROXY=*.example.org: www.example.org -> \(literalStar)")
        #expect(direct > 0 && proxied > 0, "both outcomes must be exercised")
        #expect(standInProxy.requestLines.contains { $0.hasPrefix("CONNECT ") }, "curl never used the stand-in proxy")
    }
}

import Foundation
import Testing

/// `/proxy.pac` fetched from the running binary and evaluated by a real PAC engine (pacparser,
/// the library behind many PAC test tools), never by string matching alone.
@Suite("PAC file", .onBlockingThreads, .timeLimit(.minutes(2)))
struct PACFileEndToEndTests {
    /// Runs `FindProxyForURL(url, host)` for each case in pacparser.
    static func evaluate(pac: String, cases: [(url: String, host: String)]) throws -> [String] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-pac-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pacFile = directory.appendingPathComponent("proxy.pac")
        try pac.write(to: pacFile, atomically: true, encoding: .utf8)
        let script = """
            import json, sys, pacparser
            pacparser.init()
            pacparser.parse_pac_file(sys.argv[1])
            print(json.dumps([pacparser.find_proxy(url, host) for url, host in json.loads(sys.argv[2])]))
            pacparser.cleanup()
            """
        let json = String(decoding: try JSONSerialization.data(withJSONObject: cases.map { [$0.url, $0.host] }), as: UTF8.self)
        let python = try #require(ChildEnvironment.which("python3"), "python3 is required")
        let result = try ExternalTool.run(python, ["-c", script, pacFile.path, json], timeout: .seconds(30))
        guard result.exitCode == 0, let data = result.stdout.data(using: .utf8),
              let answers = try JSONSerialization.jsonObject(with: data) as? [String]
        else {
            throw ExternalTool.Failure(description: "pacparser failed (\(result.exitCode)): \(result.stderr.suffix(2000))\n\(result.stdout)")
        }
        return answers
    }

    @Test(.enabled(if: ExternalTool.shouldRun("pacparser (python3 -m pip install pacparser)", present: ExternalTool.hasPacparser)))
    func browsersAreSentThroughTheProxyExceptForBypassedDestinations() throws {
        #expect(ExternalTool.hasPacparser, "pacparser is missing: run scripts/ensure-deps.sh --with-test-tools")
        let proxy = try ProxyProcess.launch([
            "--pac-bypass", "intranet.example.com", "--pac-bypass", ".corp.example.com,*.lab.example.org",
            "--pac-bypass", "10.0.0.0/8", "--pac-bypass", "fd00::/8",
        ])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/proxy.pac", proxy: nil)
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/x-ns-proxy-autoconfig")

        let viaProxy = "PROXY 127.0.0.1:\(proxy.port)"
        let table: [(url: String, host: String, expected: String)] = [
            ("https://www.example.com/", "www.example.com", viaProxy),
            ("http://WWW.Example.COM./a", "WWW.Example.COM.", viaProxy),
            ("http://intranet.example.com/", "intranet.example.com", "DIRECT"),
            ("http://www.intranet.example.com/", "www.intranet.example.com", "DIRECT"),
            ("http://a.corp.example.com/", "a.corp.example.com", "DIRECT"),
            ("http://a.b.corp.example.com/", "a.b.corp.example.com", "DIRECT"),
            ("http://corp.example.com/", "corp.example.com", "DIRECT"),
            ("http://evilcorp.example.com/", "evilcorp.example.com", viaProxy),
            ("http://x.lab.example.org/", "x.lab.example.org", "DIRECT"),
            ("http://lab.example.org/", "lab.example.org", "DIRECT"),
            ("http://intranet.example.com.evil.test/", "intranet.example.com.evil.test", viaProxy),
            ("http://printer/", "printer", "DIRECT"),
            ("http://localhost:3000/", "localhost", "DIRECT"),
            ("http://app.localhost/", "app.localhost", "DIRECT"),
            ("http://127.0.0.1/", "127.0.0.1", "DIRECT"),
            ("http://127.9.8.7/", "127.9.8.7", "DIRECT"),
            ("http://[::1]/", "::1", "DIRECT"),
            ("http://[::1]/", "[::1]", "DIRECT"),
            ("http://10.1.2.3/", "10.1.2.3", "DIRECT"),
            ("http://11.1.2.3/", "11.1.2.3", viaProxy),
            ("http://[fd12::1]/", "fd12::1", "DIRECT"),
            ("http://[2001:db8::1]/", "2001:db8::1", viaProxy),
            ("http://10.example.com/", "10.example.com", viaProxy),
        ]
        let answers = try Self.evaluate(pac: response.bodyText, cases: table.map { ($0.url, $0.host) })
        for (row, answer) in zip(table, answers) {
            #expect(answer == row.expected, "FindProxyForURL(\(row.url), \(row.host))")
        }
        print("pacparser results:\n" + zip(table, answers).map { "  \($0.0.host) -> \($0.1)" }.joined(separator: "\n"))
    }

    @Test(.enabled(if: ExternalTool.shouldRun("pacparser (python3 -m pip install pacparser)", present: ExternalTool.hasPacparser)))
    func aConfiguredProxyAddressIsHandedOutAsIs() throws {
        #expect(ExternalTool.hasPacparser, "pacparser is missing: run scripts/ensure-deps.sh --with-test-tools")
        let proxy = try ProxyProcess.launch(["--pac-proxy", "[2001:db8::8]:3128"])
        defer { proxy.stop() }
        let response = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/proxy.pac", proxy: nil)
        let answers = try Self.evaluate(pac: response.bodyText, cases: [("https://example.com/", "example.com"), ("http://localhost/", "localhost")])
        #expect(answers == ["PROXY [2001:db8::8]:3128", "DIRECT"])
    }
}

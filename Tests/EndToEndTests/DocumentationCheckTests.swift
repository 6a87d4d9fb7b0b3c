import Foundation
import Testing
import TestSupport

/// The docs against the binary, both ways: every flag `serve --help` lists has a row in
/// docs/configuration.md's options table and every row's flag is in `--help`; every admin endpoint
/// (as the admin 404 lists them, from the one list the router uses) is documented in
/// docs/operations.md's endpoint table and every documented one is listed; every metric name /metrics
/// exposes after some traffic is in docs/operations.md and every documented `httpdns_proxy_*`
/// name is exposed.
@Suite("Documentation check", .onBlockingThreads, .timeLimit(.minutes(3)))
struct DocumentationCheckTests {
    /// docs/NAME, found from this file: Tests/EndToEndTests/X.swift -> ../../docs.
    static func doc(_ name: String) throws -> String {
        var components = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        components.removeLast(3)
        return try String(contentsOfFile: (components + ["docs", name]).joined(separator: "/"), encoding: .utf8)
    }

    /// The lines of the Markdown table whose header row starts with `header`, up to the first line that is
    /// not a table row.
    static func table(in doc: String, header: String) throws -> [Substring] {
        let lines = doc.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix(header) }, "no table starting \(header)")
        return Array(lines[(start + 2)...].prefix { $0.hasPrefix("|") })
    }

    /// The first cell's backticked text of each row.
    static func firstCells(_ rows: [Substring]) -> [String] {
        rows.compactMap { row in
            let cell = row.split(separator: "|", omittingEmptySubsequences: true).first?.trimmingCharacters(in: .whitespaces) ?? ""
            guard cell.hasPrefix("`"), cell.hasSuffix("`"), cell.count > 2 else { return nil }
            return String(cell.dropFirst().dropLast())
        }
    }

    static func matches(_ pattern: String, in text: String) throws -> Set<String> {
        let regex = try NSRegularExpression(pattern: pattern)
        let range = NSRange(text.startIndex..., in: text)
        return Set(regex.matches(in: text, range: range).compactMap { Range($0.range(at: 1), in: text).map { String(text[$0]) } })
    }

    @Test func everyFlagInHelpIsInTheOptionsTableAndTheReverse() throws {
        let help = try ExternalTool.run(try ProxyProcess.binaryURL().path, ["serve", "--help"], timeout: .seconds(20))
        #expect(help.exitCode == 0)
        // An option line of --help starts with its flag ("  --listen <host:port>", "  -h, --help").
        let inHelp = try Self.matches(#"(?m)^\s+(?:-[a-zA-Z], )?(--[a-z0-9][a-z0-9-]*)"#, in: help.stdout)
            .subtracting(["--help", "--version"])
        let rows = try Self.table(in: try Self.doc("configuration.md"), header: "| flag | environment variable |")
        let documented = Set(Self.firstCells(rows).filter { $0.hasPrefix("--") })
        #expect(inHelp.count > 40, "parsed too few flags from --help:\n\(help.stdout.prefix(2000))")
        #expect(inHelp.subtracting(documented).isEmpty, "in --help, not in docs/configuration.md: \(inHelp.subtracting(documented).sorted())")
        #expect(documented.subtracting(inHelp).isEmpty, "in docs/configuration.md, not in --help: \(documented.subtracting(inHelp).sorted())")
        print("flags: \(inHelp.count) in --help, \(documented.count) documented")
    }

    @Test func everyAdminEndpointIsDocumentedAndTheReverse() throws {
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        let routed = Set(try AdminSummaryTests.endpoints(proxy).map { "\($0.method) \($0.path)" })
        let rows = try Self.table(in: try Self.doc("operations.md"), header: "| endpoint | answers |")
        let documented = Set(Self.firstCells(rows).map { String($0.split(separator: "?")[0]) })
        #expect(routed.subtracting(documented).isEmpty, "routed, not in docs/operations.md's endpoint table: \(routed.subtracting(documented).sorted())")
        #expect(documented.subtracting(routed).isEmpty, "documented, not routed: \(documented.subtracting(routed).sorted())")
        print("admin endpoints: \(routed.sorted())")
    }

    @Test func everyMetricIsDocumentedAndTheReverse() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        // With the DNS and TLS listeners on: their series are part of /metrics then.
        let certificates = try TLSListenerTests.Certificates()
        let proxy = try ProxyProcess.launch(
            ["--allow-destination", "127.0.0.0/8", "--dns-listen", "127.0.0.1:0", "--dns-upstream", "127.0.0.1:9", "--tls-listen", "127.0.0.1:0"]
                + certificates.arguments)
        defer { proxy.stop() }
        _ = try AdminSummaryTests.makeTraffic(proxy, origin: origin)
        let metrics = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/metrics", proxy: nil)
        #expect(metrics.status == 200)
        // Names as `# TYPE` declares them (a histogram's _bucket/_sum/_count series share its name).
        let exposed = try Self.matches(#"(?m)^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) "#, in: metrics.bodyText)
        let doc = try Self.doc("operations.md")
        let documented = try Self.matches(#"`((?:httpdns_proxy|process)_[a-z0-9_]+)"#, in: doc)
        #expect(exposed.count > 10, "\(metrics.bodyText.prefix(2000))")
        #expect(exposed.subtracting(documented).isEmpty, "exposed, not in docs/operations.md: \(exposed.subtracting(documented).sorted())")
        #expect(documented.subtracting(exposed).isEmpty, "documented, not exposed: \(documented.subtracting(exposed).sorted())")
        print("metrics: \(exposed.count) exposed and documented")
    }
}

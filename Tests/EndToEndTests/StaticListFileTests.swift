import Foundation
import Glibc
import Testing
import TestSupport

/// Provider `static` with a list file an operator edits: a missing file stops the start (exit 64,
/// naming it), a skipped entry is reported with its file, line and reason, and SIGHUP and
/// `POST /reload` read the file again. `--system-fallback false`: names not in the list never
/// reach a real resolver.
@Suite("Static list file", .onBlockingThreads, .timeLimit(.minutes(1)))
struct StaticListFileTests {
    static func list(_ entries: [(String, String)], extra: String = "") -> String {
        let lines = entries.map { "    {\"domain\": \"\($0.0)\", \"ips\": [\"\($0.1)\"]}" }
        return "{\"enable\": 1,\n  \"domainlist\": [\n" + (lines + (extra.isEmpty ? [] : [extra])).joined(separator: ",\n") + "\n  ]\n}\n"
    }

    @Test func aMissingFileAtStartIsAConfigurationErrorNamingIt() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-missing-\(UUID().uuidString).json").path
        let result = try ExternalTool.run(
            try ProxyProcess.binaryURL().path,
            ["--provider", "static", "--static-list", missing, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"],
            timeout: .seconds(30))
        #expect(result.exitCode == 64, "\(result.stderr)")
        #expect(result.stderr.contains("cannot read static list file \(missing): no such file"), "\(result.stderr)")
        #expect(!result.stderr.contains("previous list"), "\(result.stderr)")
    }

    @Test func badLinesAreReportedAndReloadsReadTheFileAgain() async throws {
        let origin = try await TestOrigin.start()
        defer { origin.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-list-\(UUID().uuidString).json").path
        defer { unlink(file) }
        // Line 4 has an address that is not one, line 5 a name that is not one.
        try Self.list([("a.test", "127.0.0.1"), ("b.test", "127.0.0.300"), ("bad..name", "127.0.0.1")])
            .write(toFile: file, atomically: true, encoding: .utf8)
        let proxy = try ProxyProcess.launch([
            "--provider", "static", "--static-list", file, "--system-fallback", "false", "--allow-destination", "127.0.0.0/8", "--ip-family", "ipv4",
        ])
        defer { proxy.stop() }
        let skippedAddress = try #require(proxy.waitForLog(where: { $0["message"] as? String == "static list entry skipped" && $0["line"] as? String == "4" }), proxy.diagnostics)
        #expect(skippedAddress["file"] as? String == file)
        #expect((skippedAddress["reason"] as? String)?.contains("'127.0.0.300' of b.test is not an IP address") == true, "\(skippedAddress)")
        let skippedName = try #require(proxy.waitForLog(where: { $0["message"] as? String == "static list entry skipped" && $0["line"] as? String == "5" }), proxy.diagnostics)
        #expect((skippedName["reason"] as? String)?.contains("'bad..name' is not a valid host name") == true, "\(skippedName)")
        #expect(try Curl.fetch("http://a.test:\(origin.port)/hello", proxy: proxy.proxyURL).status == 200, proxy.diagnostics)

        // Edited, then POST /reload: the new name resolves, the answer says what was read.
        try Self.list([("a.test", "127.0.0.1"), ("c.test", "127.0.0.1")]).write(toFile: file, atomically: true, encoding: .utf8)
        let reload = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/reload", proxy: nil, extra: ["-X", "POST"])
        #expect(reload.status == 200, "\(reload.bodyText)")
        #expect(reload.bodyText.contains("static list \(file) read again: 2 domains"), "\(reload.bodyText)")
        #expect(try Curl.fetch("http://c.test:\(origin.port)/hello", proxy: proxy.proxyURL).status == 200, proxy.diagnostics)

        // Edited again, then SIGHUP.
        try Self.list([("a.test", "127.0.0.1"), ("d.test", "127.0.0.1")], extra: "    {\"ips\": [\"127.0.0.1\"]}")
            .write(toFile: file, atomically: true, encoding: .utf8)
        proxy.signal(SIGHUP)
        let reloaded = try #require(proxy.waitForLog(where: { ($0["result"] as? String)?.contains("read again: 2 domains; skipped: line 5 (domainlist entry 3): entry has no \"domain\"") == true }), proxy.diagnostics)
        #expect(reloaded["trigger"] as? String == "SIGHUP")
        #expect(try Curl.fetch("http://d.test:\(origin.port)/hello", proxy: proxy.proxyURL).status == 200, proxy.diagnostics)

        // A file that is no longer a list: 422 with the file and where, and the running list stays.
        try "{\"domainlist\": [\n  {\"domain\": \"a.test\",, }\n]}\n".write(toFile: file, atomically: true, encoding: .utf8)
        let broken = try Curl.fetch("http://127.0.0.1:\(proxy.adminPort)/reload", proxy: nil, extra: ["-X", "POST"])
        #expect(broken.status == 422, "\(broken.bodyText)")
        #expect(broken.bodyText.contains(file) && broken.bodyText.contains("line 2"), "\(broken.bodyText)")
        #expect(try Curl.fetch("http://d.test:\(origin.port)/hello", proxy: proxy.proxyURL).status == 200, proxy.diagnostics)
    }
}

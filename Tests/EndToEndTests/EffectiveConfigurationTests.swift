import Foundation
import Testing

/// The effective configuration `config check` prints and `/summary` serves: the values in force
/// (defaults worked out, never "nil"), each with where it came from, the same in both.
@Suite("Effective configuration", .onBlockingThreads, .timeLimit(.minutes(1)))
struct EffectiveConfigurationTests {
    /// `config check --output json`'s settings.
    static func checkSettings(_ arguments: [String], environment: [String: String]) throws -> [[String: String]] {
        let run = try ResolveRun.run(["config", "check", "--output", "json"] + arguments, environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
        return try #require(object["configuration"] as? [[String: String]], "\(run.stdout)")
    }

    /// Where Alibaba's defaults apply, they are what is shown (the check makes no request).
    @Test func providerDefaultsAreShownAsInForceNeverNil() throws {
        let run = try ResolveRun.run(["config", "check", "--provider", "alibaba", "--account-id", "139450"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("resolver-url: https://resolvers.httpdns.aliyuncs.com  # default"), "\(run.stdout)")
        let resolverIP = lines.first { $0.hasPrefix("resolver-ip: ") } ?? ""
        #expect(resolverIP.hasPrefix("resolver-ip: [") && !resolverIP.hasPrefix("resolver-ip: []") && resolverIP.hasSuffix("# default"), "\(resolverIP)")
        #expect(lines.contains("provider: alibaba  # flag --provider"), "\(run.stdout)")
        #expect(lines.contains("secret: none  # default"), "\(run.stdout)")
        #expect(lines.contains("admin-listen: 127.0.0.1:8081  # default"), "\(run.stdout)")
        let nils = lines.filter { $0.contains("nil") }
        #expect(nils.isEmpty, "\(nils)")
        #expect(lines.count > 80, "one line per option: \(lines.count)")
    }

    /// Values from a file, the environment and flags, each named with its source; `/summary` of a
    /// proxy started with the same shows exactly what the check printed.
    @Test func configCheckAndSummaryShowTheSameValuesAndSources() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("effective-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("proxy.yaml").path
        try "connect-timeout: 7s\nmax-connections: 77\nproxy-auth: 'alice:s3cret-pass'\n".write(toFile: file, atomically: true, encoding: .utf8)
        let environment = ["HTTPDNS_PROXY_CONFIG": file, "HTTPDNS_PROXY_HEADER_TIMEOUT": "9s"]
        let flags = ["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--provider", "system", "--tunnel-idle-timeout", "11s"]

        let checked = try Self.checkSettings(flags, environment: environment)
        let byName = Dictionary(checked.map { ($0["name"] ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byName["connect-timeout"] == ["name": "connect-timeout", "value": "7s", "source": "file", "from": file], "\(byName)")
        #expect(byName["header-timeout"] == ["name": "header-timeout", "value": "9s", "source": "env", "from": "HTTPDNS_PROXY_HEADER_TIMEOUT"])
        #expect(byName["tunnel-idle-timeout"] == ["name": "tunnel-idle-timeout", "value": "11s", "source": "flag", "from": "--tunnel-idle-timeout"])
        #expect(byName["config"] == ["name": "config", "value": file, "source": "env", "from": "HTTPDNS_PROXY_CONFIG"])
        #expect(byName["upstream-timeout"]?["source"] == "default" && byName["upstream-timeout"]?["from"] == nil, "\(byName)")
        #expect(byName["resolver-url"]?["value"] == "none (provider system has no resolver service)", "\(byName)")
        #expect(byName["proxy-auth"]?["value"] == "[alice:<redacted>]", "\(byName)")
        let nils = checked.filter { ($0["value"] ?? "").contains("nil") }
        #expect(nils.isEmpty, "\(nils)")

        let proxy = try ProxyProcess.launch(["--tunnel-idle-timeout", "11s"], environment: environment)
        defer { proxy.stop() }
        let summary = try AdminSummaryTests.summary(proxy)
        let served = try #require(summary["configuration"] as? [[String: String]])
        #expect(served == checked, "/summary and config check differ: \(Set(served.map { "\($0)" }).symmetricDifference(Set(checked.map { "\($0)" })))")
        #expect(!String(decoding: try JSONSerialization.data(withJSONObject: summary), as: UTF8.self).contains("s3cret-pass"))
    }
}

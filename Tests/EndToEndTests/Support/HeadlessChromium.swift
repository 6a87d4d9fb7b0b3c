import Foundation

/// Headless Chromium pointed at one loopback URL and nothing else: no background networking,
/// component updates, sync or first-run fetches, and a host resolver that maps every name to
/// "not found" except 127.0.0.1 (the rules apply to IP literals too), where the admin listener is.
enum HeadlessChromium {
    static func arguments(profile: URL, proxy: String? = nil) -> [String] {
        [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--disable-extensions", "--disable-breakpad", "--disable-domain-reliability",
            "--disable-client-side-phishing-detection", "--metrics-recording-only", "--no-pings", "--mute-audio",
            proxy.map { "--proxy-server=\($0)" } ?? "--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--user-data-dir=\(profile.path)",
        ]
    }

    /// The DOM after the page's scripts ran for `budget` of virtual time (no real waiting beyond
    /// what loading takes). `screenshot`: also writes a PNG of the page there. `proxy`: a
    /// `--proxy-server` value (e.g. socks5://127.0.0.1:PORT); names then go to the proxy, since
    /// Chromium resolves none of them itself. `extra`: more flags.
    static func dumpDOM(
        _ url: String, budget: Duration = .seconds(3), screenshot: URL? = nil, proxy: String? = nil, extra: [String] = []
    ) throws -> String {
        guard let chromium = ExternalTool.chromium else {
            throw ExternalTool.Failure(description: "chromium is not installed: run scripts/ensure-deps.sh --with-test-tools (as root)")
        }
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-chromium-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: profile) }
        let milliseconds = Int(budget.components.seconds * 1000 + budget.components.attoseconds / 1_000_000_000_000_000)
        var arguments = arguments(profile: profile, proxy: proxy) + extra + ["--virtual-time-budget=\(milliseconds)"]
        if let screenshot {
            let shot = try ExternalTool.run(
                chromium, arguments + ["--window-size=1280,860", "--hide-scrollbars", "--screenshot=\(screenshot.path)", url],
                timeout: .seconds(90), environment: ["HOME": profile.path])
            guard shot.exitCode == 0 else {
                throw ExternalTool.Failure(description: "chromium --screenshot exited \(shot.exitCode): \(shot.stderr.suffix(2000))")
            }
        }
        arguments += ["--dump-dom", url]
        let result = try ExternalTool.run(chromium, arguments, timeout: .seconds(90), environment: ["HOME": profile.path])
        guard result.exitCode == 0, !result.stdout.isEmpty else {
            throw ExternalTool.Failure(description: "chromium --dump-dom exited \(result.exitCode): \(result.stderr.suffix(2000))")
        }
        return result.stdout
    }
}

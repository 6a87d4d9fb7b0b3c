import Foundation

/// Environment for child processes (curl, the proxy): the current one without proxy variables,
/// so that nothing from the developer's or CI's environment redirects or bypasses traffic.
enum ChildEnvironment {
    static let proxyVariables: Set<String> = [
        "http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy",
    ]

    static func make(overrides: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter {
            !proxyVariables.contains($0.key.lowercased())
        }
        // The proxies of the tests do not watch the host's network: an address change on the
        // machine during a run would refresh their caches and move their counters.
        // NetworkChangeTests turns it back on in its own namespace.
        environment["HTTPDNS_PROXY_NETWORK_MONITOR"] = "false"
        for (key, value) in overrides { environment[key] = value }
        return environment
    }

    /// Makes writes to closed sockets/pipes fail with EPIPE instead of killing the test process.
    static let ignoreSIGPIPE: Void = {
        signal(SIGPIPE, SIG_IGN)
    }()

    /// Looks `name` up in PATH; nil when not found or not executable.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import ProxyConfig
import ProxyUpstream

/// `httpdns-proxy resolve HOST`: one query through the configured provider, printed like a tiny dig.
struct ResolveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Resolve one host name through the configured provider and print the answer.",
        usage: OptionArguments.usage("resolve", positional: "<host>"),
        discussion: "Resolves <host> with the same resolver options as the proxy (serve's others are accepted and ignored). Exits 1 when the provider has no answer.\n\n"
            + OptionHelp.section("Options it reads", names: readOptions)
    )

    /// The options the resolver stack and the log read; serve's others are accepted and ignored.
    static let readOptions = [
        "config", "provider", "resolver-url", "resolver-ip", "resolver-token", "account-id", "secret", "alibaba-api", "alibaba-encryption",
        "aes-key", "doh-uid", "doh-access-key-id", "doh-access-key-secret", "doh-timestamp-unit", "doh-method",
        "tencent-mode", "tencent-id", "tencent-token", "tencent-key", "tencent-alg", "tencent-ecs-ip", "static-list",
        "resolver-timeout", "resolver-ca-file", "ip-family", "system-fallback", "system-dns-domain", "log-level", "log-format",
    ]

    /// The host name to resolve and serve's options (all accepted, the ones read listed in the help),
    /// read by the option table (OptionArguments).
    @Argument(parsing: .allUnrecognized, help: .hidden) var arguments: [String] = []

    func run() async throws {
        let flags = try OptionArguments.parse(arguments, for: Self.self, positional: ["host"])
        let host = flags.positional[0]
        let configuration = try LoadedConfiguration.load(flags, environment: ProcessInfo.processInfo.environment)
        let logger = LoggingSetup.bootstrap(configuration)
        let stack = ResolverStack(configuration: configuration, logger: logger)
        defer { stack.shutdown() }
        let result = await stack.resolveOnce(host)
        switch result {
        case .success(let report):
            print(report.text)
        case .failure(let report):
            StandardError.write(report.text + "\n")
            throw ExitCode(1)
        }
    }
}

import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import ProxyConfig
import ProxyCore

/// `httpdns-proxy resolve HOST`: one query through the configured provider, printed like a tiny dig.
struct ResolveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Resolve one host name through the configured provider and print the answer.",
        discussion: "Takes the same resolver options as the proxy (--provider, --resolver-url, --resolver-ip, ...). Exits 1 when the provider has no answer."
    )

    @Argument(help: "The host name to resolve.")
    var host: String

    @OptionGroup var options: ServeOptions

    func run() async throws {
        let configuration = try LoadedConfiguration.load(options, environment: ProcessInfo.processInfo.environment)
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

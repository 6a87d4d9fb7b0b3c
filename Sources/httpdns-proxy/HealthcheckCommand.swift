import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOPosix
import ProxyConfig
import ProxyAdmin

/// `httpdns-proxy healthcheck`: exit 0 when the admin `/healthz` answers 200 within 2 s, else 1
/// with the reason on stderr. For a container HEALTHCHECK in an image without curl.
struct HealthcheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthcheck",
        abstract: "Exit 0 when the admin endpoint's /healthz answers 200 within 2 s, else 1 with the reason.",
        usage: OptionArguments.usage("healthcheck"),
        discussion: """
            Reads --admin-listen like the proxy does (flag, HTTPDNS_PROXY_ADMIN_LISTEN, config file), \
            so it can run with the proxy's own environment. Only that option is read: the rest of \
            the configuration may be invalid (a file edited since the proxy started) without failing \
            the probe; a config file that is not valid YAML is searched for an admin-listen: line. \
            A listener on 0.0.0.0 or [::] is probed through 127.0.0.1 or [::1].

            """ + "\n" + OptionHelp.section("Options it reads", names: ["config", "admin-listen"])
    )

    /// All of serve's options are accepted (the proxy's own command line or environment can be
    /// reused); the help lists the ones it reads.
    @Argument(parsing: .allUnrecognized, help: .hidden) var arguments: [String] = []

    func run() async throws {
        let flags = try OptionArguments.parse(arguments, for: Self.self)
        // The running proxy is asked, so only the admin address is read, leniently: a config file
        // saved with a typo elsewhere must not make a liveness probe restart a healthy proxy.
        let address: ConfigurationLoader.AdminAddress
        do {
            address = try ConfigurationLoader.adminAddress(flagValues: flags.flagValues, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError("\(error)")
        }
        if let note = address.note {
            StandardError.write("note: \(note); probing the default admin address\n")
        }
        guard let admin = address.listen else {
            throw unhealthy("the admin listener is off (--admin-listen off); healthcheck needs it")
        }
        let host = HealthProbe.connectHost(forListener: admin.host)
        let target = HostPort(host: host, port: admin.port)
        let outcome = await HealthProbe.check(host: host, port: admin.port, group: MultiThreadedEventLoopGroup.singleton)
        switch outcome {
        case .healthy:
            print("healthy: http://\(target)/healthz answered 200")
        case .unhealthy(let reason):
            throw unhealthy("http://\(target)/healthz: \(reason)")
        }
    }

    private func unhealthy(_ reason: String) -> ExitCode {
        StandardError.write("unhealthy: \(reason)\n")
        return ExitCode(1)
    }
}

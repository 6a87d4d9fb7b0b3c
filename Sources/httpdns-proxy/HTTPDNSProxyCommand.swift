import ArgumentParser
import CCurl
import COpenSSL

@main
struct HTTPDNSProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "httpdns-proxy",
        abstract: "An HTTP forward proxy that resolves upstream hosts through HTTPDNS.",
        discussion: """
            Every option can also be set by an environment variable (HTTPDNS_PROXY_<OPTION>, e.g. \
            HTTPDNS_PROXY_LISTEN) or a key in the YAML file given by --config. Precedence: flags > \
            environment > config file > defaults. See docs/configuration.md. Check a configuration \
            with 'httpdns-proxy config check'.

            The options of serve (the default command: httpdns-proxy [serve] [options]):

            """ + "\n" + OptionHelp.groupedServeOptions,
        version: BuildInfo.versionText,
        subcommands: [ServeCommand.self, ResolveCommand.self, HealthcheckCommand.self, ConfigCommand.self, TransparentRulesCommand.self,
                      NodeLocalRulesCommand.self],
        defaultSubcommand: ServeCommand.self
    )

    /// ArgumentParser's main with what it lacks: the checks of CommandLineCheck first, and an error a
    /// subcommand finds in its configuration pointing at that subcommand's help (ArgumentParser
    /// names the top-level help for errors thrown by `run`). 64 is its usage-error status.
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let problem = CommandLineCheck.problem(in: arguments) {
            StandardError.write(problem)
            exitProcess(64)
        }
        let command: any ParsableCommand
        do {
            command = try await asyncParseAsRoot(arguments)
        } catch {
            exit(withError: error)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                var syncCommand = command
                try syncCommand.run()
            }
        } catch let error as ValidationError {
            StandardError.write("Error: \(error.message)\n  See '\(helpCommand(for: command))' for more information.\n")
            exitProcess(64)
        } catch {
            exit(withError: error)
        }
    }

    /// "httpdns-proxy serve --help", "httpdns-proxy config check --help", ...
    static func helpCommand(for command: any ParsableCommand) -> String {
        let path: [String] = switch command {
        case is ConfigCheckCommand: ["config", "check"]
        case is ResolveCommand: ["resolve"]
        case is HealthcheckCommand: ["healthcheck"]
        case is TransparentRulesCommand: ["transparent-rules"]
        case is NodeLocalRulesCommand: ["nodelocal-rules"]
        default: ["serve"]
        }
        return (["httpdns-proxy"] + path + ["--help"]).joined(separator: " ")
    }
}

enum BuildInfo {
    static let version = "0.1.0"

    /// Built at start (ArgumentParser wants it in the configuration), so it must stay cheap:
    /// `curl_version()` asks libldap for its version, which initialises SASL and dlopens its
    /// eight plugins and Berkeley DB (about 1 MiB resident for nothing); `curl_version_info` does not.
    static var versionText: String {
        let curl = "libcurl/" + String(cString: ccurl_version_number())
        let openssl = String(cString: OpenSSL_version(OPENSSL_VERSION))
        return "httpdns-proxy \(version) (\(curl); \(openssl))"
    }
}

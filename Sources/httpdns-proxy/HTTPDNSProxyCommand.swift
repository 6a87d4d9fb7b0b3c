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
            environment > config file > defaults. See docs/configuration.md.
            """,
        version: BuildInfo.versionText,
        subcommands: [ServeCommand.self, ResolveCommand.self, HealthcheckCommand.self, TransparentRulesCommand.self],
        defaultSubcommand: ServeCommand.self
    )
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

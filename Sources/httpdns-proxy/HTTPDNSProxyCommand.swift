import ArgumentParser
import CCurl
import COpenSSL
import Foundation
import Logging
import NIOCore
import NIOPosix
import ProxyConfig
import ProxyCore
import ServiceLifecycle

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
        version: BuildInfo.versionText
    )

    @OptionGroup var options: ServeOptions

    func run() async throws {
        let configuration: ProxyConfiguration
        do {
            configuration = try ConfigurationLoader.load(flags: options, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError("\(error)")
        }

        let format: LineLogHandler.Format = configuration.logFormat == .json ? .json : .text
        let level = Logger.Level(rawValue: configuration.logLevel.rawValue) ?? .info
        LoggingSystem.bootstrap { label in LineLogHandler(label: label, format: format, level: level) }
        let logger = Logger(label: "httpdns-proxy")

        for name in ConfigurationLoader.unrecognizedEnvironmentVariables(in: ProcessInfo.processInfo.environment) {
            logger.warning("unknown environment variable ignored", metadata: ["variable": "\(name)"])
        }

        let accessLog: AccessLogWriter
        do {
            switch configuration.accessLog {
            case .stdout: accessLog = try AccessLogWriter(target: .stdout)
            case .off: accessLog = try AccessLogWriter(target: .off)
            case .file(let path): accessLog = try AccessLogWriter(target: .file(path))
            }
        } catch {
            throw ValidationError("\(error)")
        }

        let group = MultiThreadedEventLoopGroup(numberOfThreads: configuration.effectiveThreads)
        let resolver: any UpstreamResolver
        switch configuration.provider {
        case .system:
            resolver = SystemResolver()
        }

        let proxy = ProxyServer(
            configuration: configuration,
            group: group,
            resolver: resolver,
            accessLog: accessLog,
            logger: logger
        )
        // The group shuts services down in reverse order: the proxy drains first while the admin
        // listener still answers /healthz (with 503 "draining").
        var services: [any Service] = []
        if let admin = configuration.adminListen {
            services.append(
                AdminServer(host: admin.host, port: admin.port, group: group, logger: logger, isDraining: { proxy.isDraining })
            )
        }
        services.append(proxy)
        logger.info(
            "starting",
            metadata: [
                "version": "\(BuildInfo.version)",
                "provider": "\(configuration.provider.rawValue)",
                "threads": "\(configuration.effectiveThreads)",
                "config_file": "\(configuration.configFile ?? "none")",
            ]
        )
        let serviceGroup = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await serviceGroup.run()
        try await group.shutdownGracefully()
    }
}

enum BuildInfo {
    static let version = "0.1.0"

    static var versionText: String {
        let curl = String(cString: curl_version())
        let openssl = String(cString: OpenSSL_version(OPENSSL_VERSION))
        return "httpdns-proxy \(version) (\(curl); \(openssl))"
    }
}

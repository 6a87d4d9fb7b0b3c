import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ProxyConfig

/// `httpdns-proxy config check`: what an operator runs before a start or a reload.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check a configuration before starting or reloading the proxy.",
        subcommands: [ConfigCheckCommand.self, OptionsTableCommand.self]
    )
}

/// `httpdns-proxy config options-table` (hidden): docs/configuration.md's options table from the
/// option registry, or with `--splice FILE` that file with its table and full example file
/// replaced (scripts/options-table.sh).
struct OptionsTableCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "options-table",
        abstract: "Print the options table of docs/configuration.md from the option registry.",
        shouldDisplay: false
    )

    @Option(help: "Print this Markdown file with the text between its table and example markers replaced")
    var splice: String?

    func run() throws {
        guard let splice else {
            print(ConfigOption.markdownTable)
            return
        }
        let document: String
        do {
            document = try ConfigurationLoader.readFile(splice)
        } catch {
            StandardError.write("cannot read \(splice): \(error)\n")
            throw ExitCode(1)
        }
        guard let spliced = ConfigOption.splicingGenerated(into: document) else {
            StandardError.write("\(splice) lacks the lines \(ConfigOption.docsTableStart) and \(ConfigOption.docsTableEnd)\n")
            throw ExitCode(1)
        }
        print(spliced, terminator: "")
    }
}

struct ConfigCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate the config file, environment and flags together; print the effective configuration.",
        usage: "httpdns-proxy config check [--output <output>] [--<option> <value> ...]",
        discussion: """
            Reads everything `serve` reads (flags > HTTPDNS_PROXY_* environment > --config file > \
            defaults) and checks it as `serve` does, files included (htpasswd, CA files, the access \
            log's directory) and listener addresses against each other. Prints the value in force \
            of every option and where it came from (default, file, env, flag), secrets redacted. \
            Exit 0 when the proxy would start with it, 1 with the reason when not. Unknown \
            HTTPDNS_PROXY_* variables are warned about on stderr. The options are serve's \
            (httpdns-proxy serve --help).
            """
    )

    enum Output: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(help: "How to print the effective configuration: text (option: value  # source) or json")
    var output: Output = .text

    /// serve's options, read by the option table (OptionArguments).
    @Argument(parsing: .allUnrecognized, help: .hidden) var arguments: [String] = []

    func run() throws {
        let flags = try OptionArguments.parse(arguments, for: Self.self)
        let environment = ProcessInfo.processInfo.environment
        for warning in ConfigurationLoader.environmentWarnings(in: environment) {
            StandardError.write("warning: \(warning)\n")
        }
        let configuration: ProxyConfiguration
        do {
            configuration = try LoadedConfiguration.loadToServe(flags, environment: environment)
        } catch {
            StandardError.write("configuration is not valid: \(error)\n")
            throw ExitCode(1)
        }
        switch output {
        case .text:
            print(configuration.checkReport)
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            let data = try encoder.encode(["configuration": configuration.effectiveSettings])
            print(String(decoding: data, as: UTF8.self))
        }
        StandardError.write("configuration is valid\n")
    }
}

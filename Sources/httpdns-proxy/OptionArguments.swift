import ArgumentParser
import ProxyConfig

/// serve's options as `serve`, `resolve`, `healthcheck` and `config check` receive them:
/// ArgumentParser hands them over unparsed (`@Argument(parsing: .allUnrecognized)`) and the
/// option table reads them (`CommandLineArguments`), so no option is declared here.
enum OptionArguments {
    /// `arguments` read by the option table, with `positional` words expected (`resolve`'s host).
    /// `--help` shows `command`'s help; a problem is a usage error (exit 64) that points at it.
    static func parse(
        _ arguments: [String], for command: any ParsableCommand.Type, positional: [String] = []
    ) throws -> CommandLineArguments {
        let parsed: CommandLineArguments
        do {
            parsed = try CommandLineArguments(parsing: arguments)
        } catch {
            throw ValidationError(error.description)
        }
        if parsed.wantsHelp { throw CleanExit.helpRequest(command) }
        if parsed.positional.count > positional.count {
            throw ValidationError(CommandLineError.unexpectedArgument(parsed.positional[positional.count]).description)
        }
        if parsed.positional.count < positional.count {
            throw ValidationError("Missing expected argument '<\(positional[parsed.positional.count])>'")
        }
        return parsed
    }

    /// The usage line of a command that takes serve's options.
    static func usage(_ command: String, positional: String = "") -> String {
        "httpdns-proxy \(command)\(positional.isEmpty ? "" : " " + positional) [--<option> <value> ...]"
    }
}

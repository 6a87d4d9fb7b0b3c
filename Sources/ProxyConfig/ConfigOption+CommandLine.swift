/// The command line of `serve`, `resolve`, `healthcheck` and `config check`, read from the option
/// table: every entry with a flag is accepted, with no declaration per option elsewhere.
///
/// The syntax is what users had from ArgumentParser: `--flag value` and `--flag=value`; a boolean
/// alone (`--cache-immutable`) means true; a repeatable option given again adds to its list, any
/// other option given again keeps the last value; `--` ends the options. The result is the flag
/// layer `ConfigurationLoader.load(flagValues:environment:)` reads, so values are not checked
/// here: the loader checks them with their source named.
public struct CommandLineArguments: Sendable, Equatable {
    /// The values given, by option name (without "--"), in command-line order.
    public var flagValues: [String: [String]] = [:]
    /// The words that are no option or option value (`resolve`'s host name), in order.
    public var positional: [String] = []
    /// `--help` or `-h` was given: the caller shows its help instead of running.
    public var wantsHelp = false

    public init(flagValues: [String: [String]] = [:], positional: [String] = [], wantsHelp: Bool = false) {
        self.flagValues = flagValues
        self.positional = positional
        self.wantsHelp = wantsHelp
    }

    /// Reads `arguments` (without the program and subcommand names) against `ConfigOption.all`.
    public init(parsing arguments: [String]) throws(CommandLineError) {
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                positional += arguments[index...]
                break
            }
            if argument == "--help" || argument == "-h" {
                wantsHelp = true
                continue
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                positional.append(argument)
                continue
            }
            let (flag, inlineValue) = Self.split(argument)
            guard flag.hasPrefix("--"), let option = ConfigOption.named(String(flag.dropFirst(2))) else {
                throw .unknownOption(flag, suggestion: ConfigurationLoader.closestFlag(to: flag))
            }
            guard option.isAllowedInFlagsAndEnvironment else {
                throw .fileOnly(option)
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else if option.isBoolean {
                // A following word is the value only when it is a boolean, so `--cache-immutable`
                // before `resolve`'s host name still means true.
                if index < arguments.endIndex, (try? ConfigOption.boolean(arguments[index])) != nil {
                    value = arguments[index]
                    index += 1
                } else {
                    value = "true"
                }
            } else if index < arguments.endIndex, !arguments[index].hasPrefix("-") || arguments[index] == "-" {
                value = arguments[index]
                index += 1
            } else {
                throw .missingValue(option)
            }
            if option.isRepeatable {
                flagValues[option.name, default: []].append(value)
            } else {
                flagValues[option.name] = [value]
            }
        }
    }

    /// "--listen=127.0.0.1:0" as ("--listen", "127.0.0.1:0"); "--listen" as ("--listen", nil).
    private static func split(_ argument: String) -> (flag: String, value: String?) {
        guard let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }
}

/// A command line the option table cannot read. The messages keep ArgumentParser's wording,
/// which scripts and users may have matched on.
public enum CommandLineError: Error, Equatable, CustomStringConvertible {
    case unknownOption(String, suggestion: String?)
    case missingValue(ConfigOption)
    case fileOnly(ConfigOption)
    case unexpectedArgument(String)

    public var description: String {
        switch self {
        case .unknownOption(let flag, let suggestion):
            "Unknown option '\(flag)'." + (suggestion.map { " Did you mean '\($0)'?" } ?? "")
        case .missingValue(let option):
            "Missing value for '\(option.flag) <\(option.valueName)>'"
        case .fileOnly(let option):
            "\(option.flag) is no command-line option: \(ConfigOption.fileOnlyReason(option.name))"
        case .unexpectedArgument(let word):
            "Unexpected argument '\(word)'"
        }
    }

    public static func == (lhs: CommandLineError, rhs: CommandLineError) -> Bool {
        lhs.description == rhs.description
    }
}

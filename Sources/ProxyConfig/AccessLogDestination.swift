/// Where the per-request access log goes.
public enum AccessLogDestination: Sendable, Hashable {
    /// Standard output, the default (containers collect it).
    case stdout
    /// No access log.
    case off
    /// Appended to a file.
    case file(path: String)

    /// Parses "stdout", "off", or a file path.
    ///
    /// A path must contain a "/" ("/var/log/access.log", "./access.log") so a
    /// misspelt keyword like "stdot" is an error instead of a new file in the
    /// working directory.
    public init(parsing text: String) throws(ConfigurationError) {
        switch text {
        case "stdout": self = .stdout
        case "off": self = .off
        case _ where text.contains("/"): self = .file(path: text)
        default:
            throw .malformedValue(reason: "expected stdout, off, or a file path containing '/' like /var/log/httpdns-proxy/access.log or ./access.log")
        }
    }
}

extension AccessLogDestination: CustomStringConvertible {
    /// The text form accepted by `init(parsing:)`.
    public var description: String {
        switch self {
        case .stdout: "stdout"
        case .off: "off"
        case .file(let path): path
        }
    }
}

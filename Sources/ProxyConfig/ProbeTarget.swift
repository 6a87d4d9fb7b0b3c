/// One `probe-domains` entry: a host name whose answers are probed, and the TCP port the probes
/// connect to (default 443, the port most requests to a name go to).
public struct ProbeTarget: Sendable, Hashable, CustomStringConvertible {
    public static let defaultPort = 443

    /// Lowercase, without a trailing dot (a cache key).
    public var host: String
    public var port: Int

    public init(host: String, port: Int = ProbeTarget.defaultPort) {
        self.host = host
        self.port = port
    }

    /// `HOST` or `HOST:PORT`; HOST is a host name (IP literals have nothing to resolve).
    public init(parsing text: String) throws(ConfigurationError) {
        var hostText = Substring(text)
        var port = Self.defaultPort
        if let colon = text.lastIndex(of: ":") {
            let portText = text[text.index(after: colon)...]
            guard let value = Int(portText), (1...65535).contains(value), portText.allSatisfy(\.isASCII) else {
                throw .malformedValue(reason: "'\(text)': expected HOST or HOST:PORT with a port 1...65535, like api.example.com or api.example.com:8443")
            }
            port = value
            hostText = text[..<colon]
        }
        self.init(host: try HostName.normalize(String(hostText)), port: port)
    }

    public var description: String { port == Self.defaultPort ? host : "\(host):\(port)" }
}

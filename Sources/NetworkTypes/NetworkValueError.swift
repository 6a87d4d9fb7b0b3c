/// Why a text is not an IP address, CIDR block, host name or host:port. The reason reads as the
/// rest of a sentence ("expected host:port like ..."); ProxyConfig wraps it into a
/// `ConfigurationError` that also names the option and where its value came from.
public struct NetworkValueError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}

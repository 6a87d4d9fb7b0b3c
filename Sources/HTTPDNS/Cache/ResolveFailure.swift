/// Why a name could not be resolved. `kind` is bounded, so `shortDescription` is safe as a metric
/// label; `message` may name hosts and servers and belongs in logs only.
public struct ResolveFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// The name does not exist (cached negatively).
        case nxdomain
        /// The name exists but has no address of the asked family (cached negatively).
        case noData = "no_data"
        case timeout
        case network
        /// The service answered with an error status.
        case server
        /// The service rejected our credentials or signature.
        case auth
        /// The answer could not be parsed.
        case malformed
        /// The caller or the resolver went away before an answer arrived.
        case cancelled
    }

    public var kind: Kind
    public var message: String
    /// How long the service (e.g. an SOA minimum) says the negative answer may be cached.
    /// `nil` lets the cache use its cap.
    public var negativeTTL: Duration?

    public init(kind: Kind, message: String, negativeTTL: Duration? = nil) {
        self.kind = kind
        self.message = message
        self.negativeTTL = negativeTTL
    }

    /// Only "the name has no address" is a property of the name; every other failure is about the
    /// path to the service and must not poison the cache.
    public var isCacheable: Bool { kind == .nxdomain || kind == .noData }

    /// A bounded label: safe as a metric label or log key.
    public var shortDescription: String { kind.rawValue }

    public var description: String { "\(kind.rawValue): \(message)" }
}

extension ResolveFailure {
    /// Maps whatever a query function threw onto a failure; a provider should throw
    /// `ResolveFailure` itself, everything else is treated as a network problem.
    init(_ error: any Error) {
        switch error {
        case let failure as ResolveFailure:
            self = failure
        case is CancellationError:
            self.init(kind: .cancelled, message: "query cancelled")
        default:
            self.init(kind: .network, message: String(describing: error))
        }
    }

    static let resolverStopped = ResolveFailure(kind: .cancelled, message: "resolver is shut down")
}

/// Why a name could not be resolved. `kind` is bounded, so `shortDescription` is safe as a metric
/// label; `message` may name hosts and servers and belongs in logs only.
public struct ResolveFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, without any detail: a private code behind static members.
    public struct Kind: Sendable, Hashable, CustomStringConvertible, Codable {
        fileprivate enum Base: String, Sendable, CaseIterable {
            case nxdomain = "nxdomain"
            case noData = "no_data"
            case timeout = "timeout"
            case network = "network"
            case server = "server"
            case auth = "auth"
            case malformed = "malformed"
            case cancelled = "cancelled"
        }

        fileprivate let base: Base

        fileprivate init(_ base: Base) { self.base = base }

        /// The name does not exist (cached negatively).
        public static let nxdomain = Kind(.nxdomain)
        /// The name exists but has no address of the asked family (cached negatively).
        public static let noData = Kind(.noData)
        public static let timeout = Kind(.timeout)
        public static let network = Kind(.network)
        /// The service answered with an error status.
        public static let server = Kind(.server)
        /// The service rejected our credentials or signature.
        public static let auth = Kind(.auth)
        /// The answer could not be parsed.
        public static let malformed = Kind(.malformed)
        /// The caller or the resolver went away before an answer arrived.
        public static let cancelled = Kind(.cancelled)

        /// A bounded snake_case label: safe as a metric label or log key.
        public var description: String { base.rawValue }

        /// Every kind, e.g. to list the labels a metric can carry.
        public static var all: [Kind] { Base.allCases.map(Kind.init) }

        /// Persisted as its label (the cache file keeps negative answers' kinds).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            let label = try container.decode(String.self)
            guard let base = Base(rawValue: label) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "unknown failure kind '\(label)'")
            }
            self.init(base)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(base.rawValue)
        }
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
    public var shortDescription: String { kind.description }

    public var description: String { "\(kind.description): \(message)" }
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

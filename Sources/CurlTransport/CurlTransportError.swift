/// The one error `CurlTransport.send` throws, besides `CancellationError`.
///
/// `description` is built from the scheme, host, port and path only: resolver URLs carry
/// signatures and account keys in the query (`s=`, `key=`) or userinfo, which must never reach logs.
public struct CurlTransportError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, without any detail: a private code behind static members.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable, CaseIterable {
            case timeout = "timeout"
            case connectFailed = "connect_failed"
            case tls = "tls"
            case tooLarge = "too_large"
            case invalidRequest = "invalid_request"
            case shutdown = "shutdown"
            case other = "other"
        }

        fileprivate let base: Base

        fileprivate init(_ base: Base) { self.base = base }

        public static let timeout = Kind(.timeout)
        public static let connectFailed = Kind(.connectFailed)
        /// Certificate or handshake problems.
        public static let tls = Kind(.tls)
        /// The response body exceeded `CurlRequest.maxResponseBytes`.
        public static let tooLarge = Kind(.tooLarge)
        public static let invalidRequest = Kind(.invalidRequest)
        /// The transport was shut down before or during the request.
        public static let shutdown = Kind(.shutdown)
        public static let other = Kind(.other)

        /// A bounded snake_case label: safe as a metric label or log key.
        public var description: String { base.rawValue }

        /// Every kind, e.g. to list the labels a metric can carry.
        public static var all: [Kind] { Base.allCases.map(Kind.init) }
    }

    public var kind: Kind
    /// Human-readable detail, already free of query strings and userinfo.
    public var detail: String
    /// The libcurl result code (CURLcode), when libcurl produced the error.
    public var curlCode: Int?

    public init(kind: Kind, detail: String, curlCode: Int? = nil) {
        self.kind = kind
        self.detail = detail
        self.curlCode = curlCode
    }

    /// A bounded label (one of `Kind`'s raw values), safe as a metric label.
    public var shortDescription: String { kind.description }

    public var description: String {
        if let curlCode {
            return "\(kind.description): \(detail) (curl code \(curlCode))"
        }
        return "\(kind.description): \(detail)"
    }

    public var isTimeout: Bool { kind == .timeout }
    public var isConnectFailure: Bool { kind == .connectFailed }
}

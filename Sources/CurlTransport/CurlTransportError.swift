/// The one error `CurlTransport.send` throws, besides `CancellationError`.
///
/// `description` is built from the scheme, host, port and path only: resolver URLs carry
/// signatures and account keys in the query (`s=`, `key=`) or userinfo, which must never reach logs.
public struct CurlTransportError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable {
        case timeout
        case connectFailed = "connect_failed"
        /// Certificate or handshake problems.
        case tls
        /// The response body exceeded `CurlRequest.maxResponseBytes`.
        case tooLarge = "too_large"
        case invalidRequest = "invalid_request"
        /// The transport was shut down before or during the request.
        case shutdown
        case other
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
    public var shortDescription: String { kind.rawValue }

    public var description: String {
        if let curlCode {
            return "\(kind.rawValue): \(detail) (curl code \(curlCode))"
        }
        return "\(kind.rawValue): \(detail)"
    }

    public var isTimeout: Bool { kind == .timeout }
    public var isConnectFailure: Bool { kind == .connectFailed }
}

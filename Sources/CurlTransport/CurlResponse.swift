/// The final response of a `CurlRequest` (redirects are never followed, so there is only one).
public struct CurlResponse: Sendable {
    public var status: Int
    /// Headers of the final response, in arrival order (interim 1xx responses are dropped).
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// CURLINFO_PRIMARY_IP: which of the pinned servers answered.
    public var remoteIP: String?
    public var totalTime: Duration
    /// True when the request went over a connection kept from an earlier request (CURLINFO_NUM_CONNECTS == 0).
    public var reusedConnection: Bool

    public init(
        status: Int,
        headers: [(name: String, value: String)],
        body: [UInt8],
        remoteIP: String?,
        totalTime: Duration,
        reusedConnection: Bool
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.remoteIP = remoteIP
        self.totalTime = totalTime
        self.reusedConnection = reusedConnection
    }

    /// First value of the header `name` (case-insensitive), if present.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

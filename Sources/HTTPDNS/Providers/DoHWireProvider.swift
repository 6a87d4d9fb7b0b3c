import CurlTransport

/// RFC 8484 DoH: DNS wire-format messages over GET (`?dns=` base64url) or POST.
public struct DoHWireProvider: HTTPDNSProvider {
    public enum Method: String, Sendable { case get, post }

    public let name = "doh"
    private let endpoint: String
    private let method: Method
    private let client: ResolverClient
    private let bearerToken: String?

    /// `bearerToken`: sent as `Authorization: Bearer TOKEN` (a node tier's `doh-token`); never logged.
    public init(endpoint: String, method: Method, client: ResolverClient, bearerToken: String? = nil) {
        self.endpoint = endpoint
        self.method = method
        self.client = client
        self.bearerToken = bearerToken
    }

    public func resolve(_ host: String, families: AddressFamilies) async throws(ResolveFailure) -> ResolvedAnswer {
        try await FamilyQueries.resolve(host, families: families) { type throws(ResolveFailure) in
            try await query(host, type: type)
        }
    }

    private func query(_ host: String, type: DNSRecordType) async throws(ResolveFailure) -> ResolvedAnswer {
        let message: [UInt8]
        do {
            // ID 0 makes GET requests cacheable by HTTP caches (RFC 8484 §4.1).
            message = try DNSMessage.makeQuery(name: host, type: type, id: 0)
        } catch {
            throw ResolveFailure(kind: .malformed, message: "cannot ask for \(host): \(error)", negativeTTL: nil)
        }
        var request: CurlRequest
        switch method {
        case .get:
            request = CurlRequest(url: DNSMessage.getPath(endpoint: endpoint, query: message))
        case .post:
            request = CurlRequest(url: endpoint)
            request.method = .post
            request.body = message
            request.headers = [(name: "Content-Type", value: "application/dns-message")]
        }
        request.headers.append((name: "Accept", value: "application/dns-message"))
        if let bearerToken { request.headers.append((name: "Authorization", value: "Bearer \(bearerToken)")) }
        return try await client.perform({ () throws(ResolveFailure) -> CurlRequest in request }) { response in
            .doh(response, service: "DoH service", authStatuses: [401, 403]) { body in
                try DNSMessage.parse(body, name: host, type: type, expectedID: 0)
            }
        }
    }
}

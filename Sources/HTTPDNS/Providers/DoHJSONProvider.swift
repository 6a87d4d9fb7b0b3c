import CurlTransport

/// DoH JSON (`/resolve?name=&type=`): Alibaba Public DNS and Google style, optionally signed.
/// A and AAAA are separate questions, asked concurrently.
public struct DoHJSONProvider: HTTPDNSProvider {
    public let name = "json"
    private let endpoint: String
    private let signature: DoHJSONSignature?
    private let client: ResolverClient
    private let unixTimeMillis: @Sendable () -> Int
    private let bearerToken: String?

    /// `bearerToken`: sent as `Authorization: Bearer TOKEN` (a node tier's `doh-token`); never logged.
    public init(
        endpoint: String, signature: DoHJSONSignature?, client: ResolverClient, bearerToken: String? = nil,
        unixTimeMillis: @escaping @Sendable () -> Int
    ) {
        self.endpoint = endpoint
        self.signature = signature
        self.client = client
        self.bearerToken = bearerToken
        self.unixTimeMillis = unixTimeMillis
    }

    public func resolve(_ host: String, families: AddressFamilies) async throws(ResolveFailure) -> ResolvedAnswer {
        try await FamilyQueries.resolve(host, families: families) { type throws(ResolveFailure) in
            try await query(host, type: type)
        }
    }

    private func query(_ host: String, type: DNSRecordType) async throws(ResolveFailure) -> ResolvedAnswer {
        let url = DoHJSON.url(
            endpoint: endpoint,
            name: host,
            type: type,
            edns: nil,
            signature: signature,
            timestampMillis: unixTimeMillis()
        )
        var request = CurlRequest(url: url)
        request.headers = [(name: "Accept", value: "application/dns-json, application/json")]
        if let bearerToken { request.headers.append((name: "Authorization", value: "Bearer \(bearerToken)")) }
        return try await client.perform({ () throws(ResolveFailure) -> CurlRequest in request }) { response in
            .doh(response, service: "DoH JSON service", authStatuses: [401, 403]) { body in
                try DoHJSON.parse(body, name: host, type: type)
            }
        }
    }
}

/// Asks A and/or AAAA as the family policy says and merges the answers. One family failing is fine
/// when the other has addresses; NXDOMAIN from either is final.
enum FamilyQueries {
    static func resolve(
        _ host: String,
        families: AddressFamilies,
        query: @Sendable @escaping (DNSRecordType) async throws(ResolveFailure) -> ResolvedAnswer
    ) async throws(ResolveFailure) -> ResolvedAnswer {
        switch families {
        case .ipv4: return try await query(.a)
        case .ipv6: return try await query(.aaaa)
        case .both:
            async let v4 = capture { () throws(ResolveFailure) in try await query(.a) }
            async let v6 = capture { () throws(ResolveFailure) in try await query(.aaaa) }
            let (a, b) = await (v4, v6)
            if case .failure(let failure) = a, failure.kind == .nxdomain { throw failure }
            if case .failure(let failure) = b, failure.kind == .nxdomain { throw failure }
            if let merged = ResolvedAnswer.merge(try? a.get(), try? b.get()) { return merged }
            // Neither family has addresses: report the more telling failure.
            switch (a, b) {
            case (.failure(let fa), .failure(let fb)):
                throw fa.kind == .noData ? fb : fa
            default:
                throw ResolveFailure(kind: .noData, message: "no addresses", negativeTTL: nil)
            }
        }
    }

    private static func capture(
        _ body: () async throws(ResolveFailure) -> ResolvedAnswer
    ) async -> Result<ResolvedAnswer, ResolveFailure> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }
}

import CurlTransport

/// Alibaba Cloud HTTPDNS, API v1: `/{account}/d` (or `sign_d` with a secret) and batch `resolve`.
public struct AlibabaProvider: HTTPDNSProvider {
    public let name = "alibaba"
    private let serviceRoot: String
    private let accountID: String
    private let secret: String?
    private let client: ResolverClient
    private let unixTime: @Sendable () -> Int

    /// `serviceRoot`: e.g. https://resolvers.httpdns.aliyuncs.com (paths are appended).
    public init(serviceRoot: String, accountID: String, secret: String?, client: ResolverClient, unixTime: @escaping @Sendable () -> Int) {
        var root = serviceRoot
        while root.hasSuffix("/") { root.removeLast() }
        self.serviceRoot = root
        self.accountID = accountID
        self.secret = secret
        self.client = client
        self.unixTime = unixTime
    }

    public var supportsBatch: Bool { true }

    /// Signed URLs expire ten minutes after they are made, as the SDKs do.
    private var signature: (secret: String, expiry: Int)? {
        secret.map { ($0, unixTime() + 600) }
    }

    public func resolve(_ host: String, families: AddressFamilies) async throws(ResolveFailure) -> ResolvedAnswer {
        let url = serviceRoot + AlibabaHTTPDNS.path(
            accountID: accountID,
            host: host,
            query: families.alibabaQuery,
            clientIP: nil,
            signature: signature
        )
        return try await client.perform({ () throws(ResolveFailure) -> CurlRequest in CurlRequest(url: url) }) { response in
            guard response.status == 200 else { return Self.classifyError(response) }
            do {
                switch try AlibabaHTTPDNS.parseSingle(response.body).resolved() {
                case .success(let answer): return .answer(answer)
                case .failure(let failure): return .fail(failure)
                }
            } catch {
                return .nextServer("malformed answer: \((error as? WireError)?.shortDescription ?? "error")")
            }
        }
    }

    public func resolveBatch(
        _ hosts: [String],
        families: AddressFamilies
    ) async throws(ResolveFailure) -> [String: Result<ResolvedAnswer, ResolveFailure>] {
        let path: String
        do {
            path = try AlibabaHTTPDNS.batchPath(accountID: accountID, hosts: hosts, query: families.alibabaQuery, signature: signature)
        } catch {
            throw ResolveFailure(kind: .malformed, message: "\(error)", negativeTTL: nil)
        }
        let url = serviceRoot + path
        var parsed: [String: WireAnswer] = [:]
        var serverIP: String?
        _ = try await client.perform({ () throws(ResolveFailure) -> CurlRequest in CurlRequest(url: url) }) { response in
            guard response.status == 200 else { return Self.classifyError(response) }
            do {
                parsed = try AlibabaHTTPDNS.parseBatch(response.body)
                serverIP = response.remoteIP
                return .answer(ResolvedAnswer(ipv4: [], ipv6: [], ttl: .zero, serverIP: nil))
            } catch {
                return .nextServer("malformed batch answer: \((error as? WireError)?.shortDescription ?? "error")")
            }
        }
        var out: [String: Result<ResolvedAnswer, ResolveFailure>] = [:]
        for host in hosts {
            let key = host.lowercased()
            guard let answer = parsed[key] else {
                out[host] = .failure(ResolveFailure(kind: .noData, message: "not in batch answer", negativeTTL: nil))
                continue
            }
            out[host] = answer.resolved().map { answer in
                var answer = answer
                answer.serverIP = serverIP
                return answer
            }
        }
        return out
    }

    /// Non-200: the service's error code decides whether another server would do better.
    static func classifyError(_ response: CurlResponse) -> ResolverClient.Verdict {
        if let code = AlibabaHTTPDNS.errorCode(in: response.body) {
            if AlibabaHTTPDNS.shouldTryNextServer(errorCode: code) {
                return .nextServer("HTTP \(response.status) \(code)")
            }
            return .fail(ResolveFailure(kind: .auth, message: "Alibaba HTTPDNS refused the request: \(code) (HTTP \(response.status))", negativeTTL: nil))
        }
        if response.status >= 500 { return .nextServer("HTTP \(response.status)") }
        return .fail(ResolveFailure(kind: .server, message: "Alibaba HTTPDNS answered HTTP \(response.status)", negativeTTL: nil))
    }
}

/// Descriptions and `dump` never show the v1 secret.
extension AlibabaProvider: CustomStringConvertible, CustomReflectable {
    public var description: String {
        "AlibabaProvider(serviceRoot: \(serviceRoot), accountID: \(accountID), secret: \(secret == nil ? "nil" : "<redacted>"))"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["serviceRoot": serviceRoot, "accountID": accountID, "signed": secret != nil], displayStyle: .struct)
    }
}

extension AddressFamilies {
    var alibabaQuery: Set<DNSRecordType> {
        switch self {
        case .ipv4: [.a]
        case .ipv6: [.aaaa]
        case .both: [.a, .aaaa]
        }
    }
}

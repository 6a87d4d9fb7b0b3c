import CurlTransport

/// Alibaba Cloud HTTPDNS, API v2: `GET /v2/d` with an HMAC-SHA256 signature (when a secret is
/// set) and optionally an AES-encrypted question and answer. Names go in batches of up to five.
/// The servers asked are the ones the scheduler (`/ss`) installs in the client's rotation.
public struct AlibabaV2Provider: HTTPDNSProvider {
    public let name = "alibaba"
    private let serviceRoot: String
    private let credentials: AlibabaHTTPDNSV2.Credentials
    private let client: ResolverClient
    private let scheduler: AlibabaServiceScheduler?
    private let unixTime: @Sendable () -> Int
    private let randomBytes: @Sendable (Int) -> [UInt8]?

    /// `scheduler`: the `/ss` runner whose servers are `client.servers` (nil: the client's fixed
    /// IPs). `randomBytes`: the IV source (tests pass a fixed one).
    public init(
        serviceRoot: String,
        credentials: AlibabaHTTPDNSV2.Credentials,
        client: ResolverClient,
        scheduler: AlibabaServiceScheduler?,
        unixTime: @escaping @Sendable () -> Int,
        randomBytes: @escaping @Sendable (Int) -> [UInt8]? = { AES128.randomBytes($0) }
    ) {
        var root = serviceRoot
        while root.hasSuffix("/") { root.removeLast() }
        self.serviceRoot = root
        self.credentials = credentials
        self.client = client
        self.scheduler = scheduler
        self.unixTime = unixTime
        self.randomBytes = randomBytes
    }

    public var supportsBatch: Bool { true }

    /// The scheduler fetches `/ss` again: the service IPs depend on where the client is.
    /// Fetches the service IPs again and waits for it (bounded by the fetch timeout per bootstrap
    /// IP), so the names refreshed after a network change go to the new network's service IPs.
    public func networkDidChange() async {
        await scheduler?.refresh(.networkChange)
    }

    public func resolve(_ host: String, families: AddressFamilies) async throws(ResolveFailure) -> ResolvedAnswer {
        let (answers, serverIP) = try await query([host], families: families)
        guard let answer = answers[DNSName.normalized(host)] else {
            throw ResolveFailure(kind: .noData, message: "no answer for the name", negativeTTL: nil)
        }
        return try answer.resolved().map { answer in
            var answer = answer
            answer.serverIP = serverIP
            return answer
        }.get()
    }

    public func resolveBatch(
        _ hosts: [String],
        families: AddressFamilies
    ) async throws(ResolveFailure) -> [String: Result<ResolvedAnswer, ResolveFailure>] {
        let (answers, serverIP) = try await query(hosts, families: families)
        var out: [String: Result<ResolvedAnswer, ResolveFailure>] = [:]
        for host in hosts {
            guard let answer = answers[DNSName.normalized(host)] else {
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

    /// One `/v2/d` request for `hosts`, through the client's server rotation.
    private func query(_ hosts: [String], families: AddressFamilies) async throws(ResolveFailure) -> ([String: WireAnswer], String?) {
        if let scheduler, scheduler.isDisabled {
            throw ResolveFailure(
                kind: .server,
                message: "Alibaba HTTPDNS is disabled for this account by its scheduling (service_status: disable)",
                negativeTTL: nil
            )
        }
        let credentials = self.credentials
        let expiry = unixTime() + 600
        let iv = credentials.encryption == .none ? [] : (randomBytes(credentials.encryption.ivLength) ?? [])
        let url: String
        do {
            url = serviceRoot + AlibabaHTTPDNSV2.path(try AlibabaHTTPDNSV2.parameters(
                hosts: hosts, query: families.alibabaQuery, credentials: credentials, expiry: expiry, iv: iv))
        } catch {
            throw ResolveFailure(kind: .malformed, message: "\(error)", negativeTTL: nil)
        }
        let rotationsBefore = client.servers.failedRotations
        var parsed: [String: WireAnswer] = [:]
        let answer: ResolvedAnswer
        do {
            answer = try await client.perform({ () throws(ResolveFailure) -> CurlRequest in CurlRequest(url: url) }) { response in
                let verdict = Self.classify(response, encryption: credentials.encryption, aesKey: credentials.aesKey)
                if case .success(let answers) = verdict { parsed = answers }
                return verdict.clientVerdict
            }
        } catch {
            if client.servers.failedRotations != rotationsBefore {
                scheduler?.requestRefresh(.rotationFailed)
            }
            throw error
        }
        return (parsed, answer.serverIP)
    }

    /// What one response means: answers, or a verdict for the server rotation.
    enum Classified {
        case success([String: WireAnswer])
        case verdict(ResolverClient.Verdict)

        var clientVerdict: ResolverClient.Verdict {
            switch self {
            case .success: .answer(ResolvedAnswer(ipv4: [], ipv6: [], ttl: .zero, serverIP: nil))
            case .verdict(let verdict): verdict
            }
        }
    }

    static func classify(_ response: CurlResponse, encryption: AlibabaHTTPDNSV2.Encryption, aesKey: [UInt8]?) -> Classified {
        let code: String?
        if response.status == 200 {
            do {
                return .success(try AlibabaHTTPDNSV2.parseAnswers(response.body, expected: encryption, aesKey: aesKey))
            } catch .providerError(let providerCode) {
                code = providerCode
            } catch .malformedJSON(let reason) where reason == AlibabaHTTPDNSV2.undecryptableReason {
                // The same key fails on every server: a configuration problem, reported once.
                return .verdict(.fail(ResolveFailure(kind: .auth, message: "Alibaba HTTPDNS answer: \(reason)", negativeTTL: nil)))
            } catch {
                return .verdict(.nextServer("malformed answer: \(error.shortDescription)"))
            }
        } else {
            code = AlibabaHTTPDNS.errorCode(in: response.body)
        }
        let what = "\(code ?? "no code") (HTTP \(response.status))"
        switch AlibabaHTTPDNSV2.classify(code: code, status: response.status) {
        case .nextServer:
            return .verdict(.nextServer("HTTP \(response.status) \(code ?? "")"))
        case .credentials:
            return .verdict(.fail(ResolveFailure(kind: .auth, message: "Alibaba HTTPDNS refused the request: \(what)", negativeTTL: nil)))
        case .rejected:
            return .verdict(.fail(ResolveFailure(kind: .server, message: "Alibaba HTTPDNS rejected the request: \(what)", negativeTTL: nil)))
        }
    }
}

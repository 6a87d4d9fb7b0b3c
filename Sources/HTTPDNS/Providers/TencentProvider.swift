import CurlTransport

/// Tencent Cloud HTTPDNS (DNSPod) `/d`: https mode with a token, or http mode with names and
/// answers encrypted (AES or DES). Both families come from one `type=addrs` request; preload and
/// refresh use the batch form (`dn=a.com,b.com`, one answer line per name).
public struct TencentProvider: HTTPDNSProvider {
    public let name = "tencent"
    private let endpoint: String
    private let id: String
    private let authentication: TencentHTTPDNS.Authentication
    private let ecsIP: String?
    private let client: ResolverClient

    /// `endpoint`: the full `/d` URL, e.g. https://119.29.29.99/d. `ecsIP`: ask for answers suited
    /// to that client address (nil: the service uses the address it sees).
    public init(endpoint: String, id: String, authentication: TencentHTTPDNS.Authentication, ecsIP: String?, client: ResolverClient) {
        self.endpoint = endpoint
        self.id = id
        self.authentication = authentication
        self.ecsIP = ecsIP
        self.client = client
    }

    public var supportsBatch: Bool { true }

    public func resolve(_ host: String, families: AddressFamilies) async throws(ResolveFailure) -> ResolvedAnswer {
        try await client.perform({ () throws(ResolveFailure) -> CurlRequest in try request([host], families) }) { response in
            switch classify(response) {
            case .body(let text):
                do {
                    switch try TencentHTTPDNS.parseSingle(text).resolved() {
                    case .success(let answer): return .answer(answer)
                    case .failure(let failure): return .fail(failure)
                    }
                } catch {
                    return .nextServer("malformed answer: \((error as? WireError)?.shortDescription ?? "error")")
                }
            case .verdict(let verdict):
                return verdict
            }
        }
    }

    public func resolveBatch(
        _ hosts: [String],
        families: AddressFamilies
    ) async throws(ResolveFailure) -> [String: Result<ResolvedAnswer, ResolveFailure>] {
        var out: [String: Result<ResolvedAnswer, ResolveFailure>] = [:]
        for start in stride(from: 0, to: hosts.count, by: TencentHTTPDNS.maximumBatchSize) {
            let chunk = Array(hosts[start..<min(start + TencentHTTPDNS.maximumBatchSize, hosts.count)])
            for (host, result) in try await resolveChunk(chunk, families: families) { out[host] = result }
        }
        return out
    }

    private func resolveChunk(
        _ hosts: [String],
        families: AddressFamilies
    ) async throws(ResolveFailure) -> [String: Result<ResolvedAnswer, ResolveFailure>] {
        var parsed: [String: WireAnswer] = [:]
        let answered = try await client.perform({ () throws(ResolveFailure) -> CurlRequest in try request(hosts, families) }) { response in
            switch classify(response) {
            case .body(let text):
                do {
                    parsed = try TencentHTTPDNS.parseBatch(text, hosts: hosts)
                    return .answer(ResolvedAnswer(ipv4: [], ipv6: [], ttl: .zero, serverIP: nil))
                } catch {
                    return .nextServer("malformed batch answer: \((error as? WireError)?.shortDescription ?? "error")")
                }
            case .verdict(let verdict):
                return verdict
            }
        }
        var out: [String: Result<ResolvedAnswer, ResolveFailure>] = [:]
        for host in hosts {
            guard let answer = parsed[DNSName.normalized(host)] else {
                out[host] = .failure(ResolveFailure(kind: .noData, message: "not in batch answer", negativeTTL: nil))
                continue
            }
            out[host] = answer.resolved().map { answer in
                var answer = answer
                answer.serverIP = answered.serverIP
                return answer
            }
        }
        return out
    }

    /// The request of one query (http mode: a fresh IV per query; the server rotation resends
    /// the same bytes).
    private func request(_ hosts: [String], _ families: AddressFamilies) throws(ResolveFailure) -> CurlRequest {
        do {
            var request = CurlRequest(url: try TencentHTTPDNS.url(
                endpoint: endpoint, hosts: hosts, id: id, authentication: authentication, families: families, ecsIP: ecsIP))
            // Hex doubles the answer; anything much longer is not an answer.
            request.maxResponseBytes = 2 * TencentHTTPDNS.maximumAnswerBytes + 1024
            return request
        } catch {
            throw ResolveFailure(kind: .malformed, message: "\(error)", negativeTTL: nil)
        }
    }

    enum Classified {
        /// 200: the clear answer text.
        case body([UInt8])
        case verdict(ResolverClient.Verdict)
    }

    /// Status first; in http mode a 200's body is hex of the encrypted answer (an empty body is
    /// an empty answer). Refusals name the options to check, never their values.
    func classify(_ response: CurlResponse) -> Classified {
        switch response.status {
        case 200:
            guard case .encrypted(let cipher) = authentication, response.body.contains(where: { !Self.isSpace($0) }) else {
                return .body(response.body)
            }
            guard response.body.count <= 2 * TencentHTTPDNS.maximumAnswerBytes + 64 else {
                return .verdict(.nextServer("answer too long for a Tencent HTTPDNS answer"))
            }
            guard let clear = cipher.decryptHex(response.body) else {
                // The same key fails on every server: a configuration problem, reported once
                // (as Alibaba's undecryptable answers are), not a walk through every server.
                return .verdict(.fail(ResolveFailure(
                    kind: .auth, message: "Tencent HTTPDNS answer does not decrypt (wrong tencent-key or tencent-alg, or not a Tencent HTTPDNS answer)", negativeTTL: nil)))
            }
            return .body(clear)
        case 401, 403:
            let what = if case .token = authentication { "tencent-id and tencent-token" } else { "tencent-id, tencent-key and tencent-alg" }
            return .verdict(.fail(ResolveFailure(
                kind: .auth, message: "Tencent HTTPDNS refused the request (HTTP \(response.status)): check \(what)", negativeTTL: nil)))
        case 429, 500...:
            return .verdict(.nextServer("HTTP \(response.status)"))
        default:
            return .verdict(.fail(ResolveFailure(kind: .server, message: "Tencent HTTPDNS answered HTTP \(response.status)", negativeTTL: nil)))
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}

extension TencentProvider: CustomStringConvertible, CustomReflectable {
    /// Never the token or key: "tencent(https://119.29.29.99/d, id: 1234, token)".
    public var description: String {
        "tencent(\(endpoint), id: \(id), \(authentication))"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["endpoint": endpoint, "id": id, "authentication": "\(authentication)"], displayStyle: .struct)
    }
}

extension TencentHTTPDNS.Authentication: CustomStringConvertible, CustomReflectable {
    /// The kind only: "token" or "aes"/"des".
    public var description: String {
        switch self {
        case .token: "token"
        case .encrypted(let cipher): cipher.algorithm.rawValue
        }
    }

    public var customMirror: Mirror { Mirror(self, children: ["kind": description], displayStyle: .enum) }
}
